package core

import "strings"

// ActorKind says who made a change: a person, the agent, plangate itself, or a rule
// acting on a person's earlier choice.
type ActorKind string

// Actor kinds.
const (
	ActorPerson ActorKind = "person"
	ActorAgent  ActorKind = "agent"
	ActorSystem ActorKind = "system" // the scheduler: reminders, approval timeouts
	ActorRule   ActorKind = "rule"   // e.g. auto-approve accepting a proposal
	// ActorAdmin is an operator acting through the admin API, named by its admin token.
	ActorAdmin ActorKind = "admin"
)

// Actor is who an audit row is attributed to: a person by their platform user id, a rule by
// its name. The kind is kept apart from the id so a person whose id is "system" cannot pass
// for the scheduler.
type Actor struct {
	Kind ActorKind
	ID   string
}

// The actors that are not people.
var (
	AgentActor  = Actor{Kind: ActorAgent}
	SystemActor = Actor{Kind: ActorSystem}
	AutoRule    = Actor{Kind: ActorRule, ID: "auto"}
)

// PersonActor is the actor for the person with platform user id id.
func PersonActor(id string) Actor { return Actor{Kind: ActorPerson, ID: id} }

// AdminActor is the actor for the operator of the admin API's token named name.
func AdminActor(name string) Actor { return Actor{Kind: ActorAdmin, ID: name} }

// String is the stored form: "person:<id>", "rule:<name>", "admin:<name>", "agent", "system".
func (a Actor) String() string {
	switch a.Kind {
	case "":
		return ""
	case ActorAgent, ActorSystem:
		return string(a.Kind)
	}
	return string(a.Kind) + ":" + a.ID
}

// ParseActor reads the stored form back. Anything it does not recognise is kept as a
// person's id, which is what rows written before actors had kinds held.
func ParseActor(s string) Actor {
	switch s {
	case "":
		return Actor{}
	case string(ActorAgent):
		return AgentActor
	case string(ActorSystem):
		return SystemActor
	}
	if kind, id, ok := strings.Cut(s, ":"); ok {
		switch k := ActorKind(kind); k {
		case ActorPerson, ActorRule, ActorAdmin:
			return Actor{Kind: k, ID: id}
		}
	}
	return PersonActor(s)
}

// MarshalText encodes an actor in its stored form, so JSON shows "person:alice".
func (a Actor) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText decodes the stored form.
func (a *Actor) UnmarshalText(b []byte) error {
	*a = ParseActor(string(b))
	return nil
}
