package runplan_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"horizon/shared/horizon"
	"horizon/shared/runplan"
)

func describe(steps []horizon.Step) []string {
	var out []string
	for _, s := range steps {
		d := fmt.Sprintf("%d:%s", s.Phase, s.Kind)
		if s.Kind.Nagios() {
			if !s.TakesGate() || *s.Node != horizon.NagiosGateNode {
				d += "(no gate)"
			}
			d += "@" + s.ServerID.String()[:4]
		}
		out = append(out, d)
	}
	return out
}

func TestNagiosSteps(t *testing.T) {
	a, b := uuid.MustParse("aaaa0000-0000-4000-8000-000000000000"), uuid.MustParse("bbbb0000-0000-4000-8000-000000000000")
	builds := []horizon.Step{{Phase: 0, Kind: horizon.StepApply}, {Phase: 1, Kind: horizon.StepApply}, {Phase: 1, Kind: horizon.StepApply}}
	if got := describe(runplan.Publish(slices.Clone(builds), a)); !slices.Equal(got, []string{"0:apply", "1:apply", "1:apply", "2:nagios_publish@aaaa"}) {
		t.Errorf("publish: %v", got)
	}
	if got := describe(runplan.Moved(runplan.Publish(slices.Clone(builds), a), b)); !slices.Equal(got,
		[]string{"0:apply", "1:apply", "1:apply", "2:nagios_publish@aaaa", "2:nagios_unpublish@bbbb"}) {
		t.Errorf("moved: %v", got)
	}
	if got := describe(runplan.Publish(nil, a)); !slices.Equal(got, []string{"0:nagios_publish@aaaa"}) {
		t.Errorf("publish alone: %v", got)
	}
	destroys := []horizon.Step{{Phase: 0, Kind: horizon.StepDestroy}, {Phase: 1, Kind: horizon.StepDestroy}}
	if got := describe(runplan.Unpublish(destroys, a)); !slices.Equal(got, []string{"0:nagios_unpublish@aaaa", "1:destroy", "2:destroy"}) {
		t.Errorf("unpublish: %v", got)
	}
	if destroys[0].Phase != 0 {
		t.Error("Unpublish changed its argument's steps")
	}
}
