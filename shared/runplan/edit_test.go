package runplan

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/template"
)

// cluster is a three-phase definition: a control plane replaced add-first, workers that read
// its join command, and a monitor that reads nothing.
func cluster() *template.Definition {
	return &template.Definition{Phases: []template.Phase{
		{Name: "control", Jobs: []template.Job{{Name: "master", Machine: true, Replace: template.ReplaceAddFirst,
			Cleanup: []template.Script{{Name: "drain", Path: "drain.sh"}}}}},
		{Name: "nodes", Jobs: []template.Job{{Name: "worker", Machine: true, Executions: template.Executions{Multiple: true},
			Inputs:     map[string]string{"join": "${jobs.master.outputs.join}"},
			Parameters: []template.Parameter{{Name: "memory_mb", Type: "integer", Default: 2048}},
			Cleanup:    []template.Script{{Name: "leave", Path: "leave.sh"}}}}},
		{Name: "extras", Jobs: []template.Job{{Name: "monitor", Machine: true}}},
	}}
}

func execution(job string, index int) horizon.Execution {
	hash := "applied"
	return horizon.Execution{ID: uuid.New(), Job: job, Index: index, State: horizon.ExecutionActive, AppliedHash: &hash,
		Config: horizon.ExecutionConfig{Parameters: map[string]any{}}}
}

// keep is what an edit wants of an execution it leaves as it is.
func keep(e horizon.Execution) Desired {
	return Desired{Existing: &e, Job: e.Job, Config: e.Config}
}

func hashes(execs ...horizon.Execution) map[uuid.UUID]string {
	m := map[uuid.UUID]string{}
	for _, e := range execs {
		m[e.ID] = *e.AppliedHash
	}
	return m
}

func order(changes []Change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%d %s %s[%d]", c.Phase, c.Action, c.Job, c.Index))
	}
	return out
}

func TestEdit(t *testing.T) {
	t.Parallel()
	def := cluster()
	master, w0, w1, mon := execution("master", 0), execution("worker", 0), execution("worker", 1), execution("monitor", 0)
	current := []horizon.Execution{master, w0, w1, mon}
	unchanged := hashes(current...)
	raised := keep(w1)
	raised.Config = horizon.ExecutionConfig{Parameters: map[string]any{"memory_mb": 4096}}
	raisedHashes := hashes(current...)
	raisedHashes[w1.ID] = "other"
	newMaster := Desired{Job: "master"}
	newWorker := Desired{Job: "worker"}
	upgraded := &template.Definition{Phases: cluster().Phases[:2]}

	tests := []struct {
		name    string
		in      EditInput
		want    []string
		because map[string][]Reason
	}{
		{
			name: "nothing changes",
			in:   EditInput{Def: def, Old: def, Current: current, Desired: []Desired{keep(master), keep(w0), keep(w1), keep(mon)}, NewHash: unchanged},
		},
		{
			name:    "one worker's memory: that worker alone",
			in:      EditInput{Def: def, Old: def, Current: current, Desired: []Desired{keep(master), keep(w0), raised, keep(mon)}, NewHash: raisedHashes},
			want:    []string{"5 reapply worker[1]"},
			because: map[string][]Reason{"worker[1]": {{Kind: "param", Param: "memory_mb", From: 2048, To: 4096}}},
		},
		{
			name: "replacing the add-first master: built first, old one removed after, workers re-checked",
			in:   EditInput{Def: def, Old: def, Current: current, Desired: []Desired{newMaster, keep(w0), keep(w1), keep(mon)}, NewHash: unchanged},
			want: []string{"2 create master[1]", "3 destroy master[0]", "5 dependent worker[0]", "5 dependent worker[1]"},
			because: map[string][]Reason{"worker[0]": {{Kind: "input", Input: "join", FromJob: "master"}},
				"master[0]": {{Kind: "removed"}}},
		},
		{
			name: "replacing a remove-first worker: removed first, then built",
			in:   EditInput{Def: def, Old: def, Current: current, Desired: []Desired{keep(master), keep(w0), newWorker, keep(mon)}, NewHash: unchanged},
			want: []string{"4 destroy worker[1]", "5 create worker[2]"},
		},
		{
			name: "an upgrade that drops a job destroys it first, with the old version",
			in: EditInput{Def: upgraded, Old: def, OldVersion: 1, Current: current, Desired: []Desired{keep(master), keep(w0), keep(w1)},
				NewHash: unchanged, Upgrade: true},
			want:    []string{"0 destroy monitor[0]"},
			because: map[string][]Reason{"monitor[0]": {{Kind: "removed_from_template"}}},
		},
		{
			name: "a failed stack's unfinished execution is finished",
			in: EditInput{Def: def, Old: def, Current: current, Desired: []Desired{keep(master), keep(w0), keep(w1), keep(mon)}, NewHash: unchanged,
				Unfinished: map[uuid.UUID]bool{mon.ID: true}},
			want:    []string{"8 reapply monitor[0]"},
			because: map[string][]Reason{"monitor[0]": {{Kind: "unfinished"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Edit(tc.in)
			if !reflect.DeepEqual(order(got), tc.want) {
				t.Fatalf("got %v, want %v", order(got), tc.want)
			}
			for _, c := range got {
				want, ok := tc.because[fmt.Sprintf("%s[%d]", c.Job, c.Index)]
				if ok && !reflect.DeepEqual(c.Because, want) {
					t.Errorf("%s[%d] because %+v, want %+v", c.Job, c.Index, c.Because, want)
				}
			}
		})
	}
}

func TestEditDestroyListsCleanupAndOldVersion(t *testing.T) {
	t.Parallel()
	def := cluster()
	master, w0, mon := execution("master", 0), execution("worker", 0), execution("monitor", 0)
	got := Edit(EditInput{Def: &template.Definition{Phases: def.Phases[:2]}, Old: def, OldVersion: 3,
		Current: []horizon.Execution{master, w0, mon}, Desired: []Desired{keep(master)}, NewHash: hashes(master), Upgrade: true})
	var worker, monitor *Change
	for i := range got {
		switch got[i].Job {
		case "worker":
			worker = &got[i]
		case "monitor":
			monitor = &got[i]
		}
	}
	if worker == nil || !reflect.DeepEqual(worker.Cleanup, []string{"leave"}) || worker.TemplateVersion != nil {
		t.Fatalf("worker destroy %+v: want cleanup [leave], run with the stack's version", worker)
	}
	if monitor == nil || monitor.TemplateVersion == nil || *monitor.TemplateVersion != 3 {
		t.Fatalf("monitor destroy %+v: want version 3's code", monitor)
	}
}

func TestStepsShowEveryCard(t *testing.T) {
	t.Parallel()
	def := cluster()
	master, w0, w1, mon := execution("master", 0), execution("worker", 0), execution("worker", 1), execution("monitor", 0)
	changes := []Change{{Action: ActionReapply, Job: "worker", Index: 1, Execution: w1}}
	steps := Steps(def, changes, []horizon.Execution{master, w0, w1, mon})
	var got []string
	for _, s := range steps {
		got = append(got, fmt.Sprintf("%d %s[%d] %s %s", s.Phase, s.Job, *s.ExecutionIndex, s.State, *s.Reason))
	}
	want := []string{"2 master[0] skipped unchanged", "5 worker[0] skipped unchanged", "5 worker[1] pending reapply",
		"8 monitor[0] skipped unchanged"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
