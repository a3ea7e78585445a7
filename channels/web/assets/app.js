// plangate web: live updates over Server-Sent Events and button posts. Pages work without
// it (forms post and come back); with it, nothing reloads.
"use strict";
(function () {
  var status = function (text) {
    var el = document.getElementById("status");
    if (el) { el.textContent = text; }
  };
  var transcript = document.getElementById("transcript");
  // The message list scrolls by itself; it follows new messages while it is at the end.
  var atEnd = function () { return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40; };
  var scroll = function () { transcript.scrollTop = transcript.scrollHeight; };
  if (transcript) { scroll(); }
  var follow = function (change) {
    var was = atEnd();
    change();
    if (was) { scroll(); }
  };
  // The header and the side list name the conversation after its newest plan and say
  // where that plan stands, as the page drawn anew would.
  var syncHead = function () {
    var cards = transcript.querySelectorAll("section.card"), card = cards[cards.length - 1];
    if (!card) { return; }
    var title = card.querySelector(".title").textContent, state = card.querySelector(".badge").textContent;
    document.querySelectorAll(".convo-title, .convos li.current .ctitle").forEach(function (el) { el.textContent = title; });
    document.querySelectorAll(".convo-head .state, .convos li.current .state").forEach(function (el) { el.textContent = state; });
    document.title = title + " · plangate";
  };
  if (transcript && transcript.dataset.stream && window.EventSource) {
    var es = new EventSource(transcript.dataset.stream);
    var data = function (e) { return JSON.parse(e.data); };
    es.addEventListener("msg", function (e) {
      var d = data(e);
      if (d.id && document.getElementById(d.id)) { return; }
      var hint = transcript.querySelector(".item.hint");
      if (hint) { hint.remove(); }
      transcript.insertAdjacentHTML("beforeend", d.html);
      scroll();
      syncHead();
    });
    es.addEventListener("edit", function (e) {
      var d = data(e), el = document.getElementById(d.id);
      if (el) { follow(function () { el.outerHTML = d.html; }); }
    });
    es.addEventListener("card", function (e) {
      var d = data(e);
      follow(function () {
        document.querySelectorAll("[data-plan]").forEach(function (el) {
          if (el.getAttribute("data-plan") === d.plan) { el.outerHTML = d.html; }
        });
      });
      syncHead();
    });
    es.addEventListener("reload", function () { es.close(); window.location.reload(); });
    es.addEventListener("limit", function (e) { es.close(); document.body.dataset.live = "off"; status(data(e).text); });
    es.onopen = function () { document.body.dataset.live = "on"; };
    es.onerror = function () { document.body.dataset.live = "reconnecting"; };
  }
  var posting = 0;
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.hasAttribute("data-fetch")) { return; }
    ev.preventDefault();
    // Forms that arrived live carry no CSRF token (it is the sign-in's): use the page's.
    var own = document.querySelector("header input[name=csrf]");
    if (form.elements.csrf && !form.elements.csrf.value && own) { form.elements.csrf.value = own.value; }
    posting++;
    // A file upload (the card's Edit) goes as multipart; everything else as a plain form.
    var body = form.enctype === "multipart/form-data" ? new FormData(form) : new URLSearchParams(new FormData(form));
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    fetch(form.action, { method: "POST", body: body, credentials: "same-origin", headers: { "X-Plangate-Fetch": "1" } })
      .then(function (r) {
        if (r.ok) {
          status("");
          if (form.hasAttribute("data-reset")) { form.reset(); form.querySelectorAll("textarea").forEach(function (t) { t.style.height = ""; }); }
          if (!transcript) { window.location.reload(); }
          return;
        }
        return r.text().then(function (t) { status(t.trim()); if (!transcript && r.status === 409) { window.location.reload(); } });
      })
      .catch(function () { status("The gateway could not be reached; try again."); })
      .finally(function () { posting--; buttons.forEach(function (b) { b.disabled = false; }); });
  });
  // The phone's drawer of conversations.
  var toggle = document.getElementById("convos-toggle");
  if (toggle && document.getElementById("convos")) {
    toggle.addEventListener("click", function () {
      var open = document.body.classList.toggle("drawer-open");
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
  }
  // The dashboard refreshes its list every few seconds, unless someone is typing in it or
  // has a Revise or Edit form open; the rows someone opened stay open.
  var rows = document.querySelector("main.dashboard");
  if (rows && window.fetch) {
    window.setInterval(function () {
      var busy = rows.querySelector("details.revise[open], details.edit[open]") || (document.activeElement && rows.contains(document.activeElement) && document.activeElement.matches("input, textarea, select"));
      if (busy || posting > 0 || document.hidden) { return; }
      fetch(window.location.href, { credentials: "same-origin", headers: { "X-Plangate-Refresh": "1" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) { return; }
          var next = new DOMParser().parseFromString(html, "text/html").querySelector("main.dashboard");
          if (!next) { return; }
          rows.querySelectorAll(".row > details[open]").forEach(function (d) {
            var same = next.querySelector('.row[data-session="' + CSS.escape(d.parentNode.dataset.session) + '"] > details');
            if (same) { same.open = true; }
          });
          if (next.innerHTML !== rows.innerHTML) { rows.innerHTML = next.innerHTML; }
        })
        .catch(function () {});
    }, Number(rows.dataset.refresh) || 10000);
  }
  var text = document.getElementById("text");
  if (text) {
    text.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); text.form.requestSubmit(); }
    });
    // The box grows with what is typed, up to its CSS max-height.
    text.addEventListener("input", function () {
      text.style.height = "auto";
      text.style.height = text.scrollHeight + "px";
    });
  }
}());
