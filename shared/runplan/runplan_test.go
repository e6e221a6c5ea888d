package runplan

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// TestRemovalUndoesActionsFirst: a removal's plan undoes the instances in the order given
// (newest first), one phase each, then destroys the executions latest phase first, in the
// phases after.
func TestRemovalUndoesActionsFirst(t *testing.T) {
	execs := []horizon.Execution{execution("master", 0), execution("worker", 0), execution("worker", 1)}
	ins := []horizon.ActionInstance{{ID: uuid.New(), Action: "add-user", Number: 3}, {ID: uuid.New(), Action: "add-dns", Number: 1}}
	steps := Then(UndoActions(ins), Destroy(cluster(), execs, All))
	var got []string
	for _, s := range steps {
		got = append(got, fmt.Sprintf("%d %s %s[%d]", s.Phase, s.Kind, s.Job, *s.ExecutionIndex))
	}
	want := []string{"0 action_destroy add-user[3]", "1 action_destroy add-dns[1]", "3 destroy worker[0]", "3 destroy worker[1]",
		"4 destroy master[0]"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("removal plan:\n got %v\nwant %v", got, want)
	}
	if *steps[0].ActionInstanceID != ins[0].ID || steps[0].ExecutionID != nil {
		t.Fatalf("the first undo step: %+v", steps[0])
	}
	if plain := Then(nil, Destroy(cluster(), execs, All)); plain[0].Phase != 1 || plain[0].Job != "worker" {
		t.Fatalf("without instances the destroys keep their phases: %+v", plain[0])
	}
}
