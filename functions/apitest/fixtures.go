package apitest

import (
	"context"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/store"
)

// NewStack creates a draft stack of team through the store, with an environment and a
// template of its own, for tests of what reads a stack (logs, events) without deploying one.
func (s *Server) NewStack(team uuid.UUID, name string) uuid.UUID {
	s.t.Helper()
	ctx := context.Background()
	env, err := store.EnvironmentCreate(ctx, s.DB, horizon.Environment{Name: "env-" + uuid.NewString()[:8]})
	if err != nil {
		s.t.Fatalf("create environment: %v", err)
	}
	tmpl, _, err := store.TemplateCreate(ctx, s.DB, horizon.Template{Name: "tmpl-" + uuid.NewString()[:8], Active: true}, horizon.TemplateVersion{
		Definition: []byte(`{"name":"t","phases":[]}`), DefinitionHash: "sha256:" + uuid.NewString(),
		JobCommits: map[string]string{}, Modules: []byte(`{"jobs":{}}`)})
	if err != nil {
		s.t.Fatalf("create template: %v", err)
	}
	st, err := store.StackCreate(ctx, s.DB, horizon.Stack{TeamID: team, Name: name, EnvironmentID: env.ID, TemplateID: tmpl.ID, TemplateVersion: 1})
	if err != nil {
		s.t.Fatalf("create stack: %v", err)
	}
	return st.ID
}

// NewRun starts a deploy run of stack (without steps) through the store and returns its id.
// The stack may have one run in progress at a time: finish the previous one first
// (FinishRun).
func (s *Server) NewRun(stack uuid.UUID) uuid.UUID {
	s.t.Helper()
	r, _, err := store.RunInsertWithSteps(context.Background(), s.DB, horizon.Run{StackID: &stack, Kind: horizon.RunDeploy}, nil)
	if err != nil {
		s.t.Fatalf("create run: %v", err)
	}
	return r.ID
}

// FinishRun moves a run to state (a terminal one) through the store.
func (s *Server) FinishRun(run uuid.UUID, state horizon.RunState) {
	s.t.Helper()
	if _, err := store.RunSetState(context.Background(), s.DB, run, state, nil); err != nil {
		s.t.Fatalf("finish run: %v", err)
	}
}
