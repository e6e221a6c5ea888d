package isotemplate

import (
	"fmt"

	"horizon/shared/horizon"
)

// Summary is how an ISO run ended, stage by stage: what it did, what it skipped and why, what
// failed with its first error line, and what never ran.
type Summary struct {
	Done    []string `json:"done"`
	Skipped []string `json:"skipped"`
	Failed  []string `json:"failed"`
	NotRun  []string `json:"not_run"`
}

// Summarize sums up a run's steps (in order). Each entry is "<stage>: <what>", the stage being
// "clones[n]" for a clone.
func Summarize(steps []horizon.Step) Summary {
	s := Summary{Done: []string{}, Skipped: []string{}, Failed: []string{}, NotRun: []string{}}
	for _, st := range steps {
		label := StepLabel(st)
		reason := ""
		if st.Reason != nil {
			reason = *st.Reason
		}
		switch st.State {
		case horizon.StepSucceeded:
			s.Done = append(s.Done, label+": "+orDefault(reason, "done"))
		case horizon.StepSkipped:
			s.Skipped = append(s.Skipped, label+": "+orDefault(reason, "skipped"))
		case horizon.StepFailed:
			msg := "failed"
			if st.Error != nil {
				msg = *st.Error
			}
			s.Failed = append(s.Failed, label+": "+msg)
		case horizon.StepHeld:
			s.NotRun = append(s.NotRun, label+": held, an earlier stage failed")
		case horizon.StepCanceled:
			s.NotRun = append(s.NotRun, label+": canceled")
		default:
			s.NotRun = append(s.NotRun, label+": "+string(st.State))
		}
	}
	return s
}

// StepLabel names a step of an ISO run: its stage, and "clones[n]" for a clone.
func StepLabel(st horizon.Step) string {
	if st.ExecutionIndex != nil {
		return fmt.Sprintf("%s[%d]", st.Job, *st.ExecutionIndex)
	}
	return st.Job
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
