package web

import (
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/plangate/plangate/channels"
	"github.com/plangate/plangate/channels/httpserver"
	"github.com/plangate/plangate/core"
)

// editUpload is the card's Edit: an edited copy of the plan file, uploaded as multipart
// (csrf first, then the file, in the form's order), read within the size limit and handed
// to the engine as /plan edit. What the engine makes of it (a new version, or why not)
// arrives in the conversation like any reply.
func (c *Channel) editUpload(w http.ResponseWriter, r *http.Request, v viewer) {
	id, cv, ok := c.existing(w, r, v)
	if !ok {
		return
	}
	back := "/c/" + id
	f, status, why := c.readUpload(r, v)
	if status == 0 {
		if why = c.tooLong(f.Name); why != "" {
			status = http.StatusRequestEntityTooLarge
		}
	}
	if status != 0 {
		c.answer(w, r, back, status, why)
		return
	}
	c.addText(cv, itemUser, "Edited plan: "+f.Name, v.Name)
	m := core.Message{ID: "web-" + randomID(8), Address: address(v.Name, id), Sender: person(v.Name, Name), Text: "/plan edit",
		Direct: true, Attachments: []core.File{f}, Time: c.d.Now()}
	c.handOn(w, r, back, m, "The gateway is not taking messages right now; try again in a moment.")
}

// readUpload reads the csrf field and the file of an upload; a non-zero status is the
// answer when they are not there.
func (c *Channel) readUpload(r *http.Request, v viewer) (core.File, int, string) {
	mr, err := r.MultipartReader()
	if err != nil {
		return core.File{}, http.StatusBadRequest, "Choose the edited plan file first."
	}
	csrfOK := false
	for {
		part, err := mr.NextPart()
		if err != nil {
			return core.File{}, http.StatusBadRequest, "Choose the edited plan file first."
		}
		switch part.FormName() {
		case "csrf":
			got, _ := io.ReadAll(io.LimitReader(part, 256))
			csrfOK = httpserver.SecretEqual(strings.TrimSpace(string(got)), v.CSRF)
		case "file":
			if !csrfOK {
				return core.File{}, http.StatusForbidden, "This form is out of date or came from another site (CSRF check failed). Reload the page and try again."
			}
			if part.FileName() == "" {
				return core.File{}, http.StatusBadRequest, "Choose the edited plan file first."
			}
			f, err := channels.FetchPlanFile(r.Context(), part.FileName(), part.Header.Get("Content-Type"), 0, func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(part), nil
			})
			if err != nil {
				return core.File{}, http.StatusBadRequest, "The file could not be read; try again."
			}
			return f, 0, ""
		}
	}
}
