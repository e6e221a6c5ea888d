package horizon

// Move is what advancing a run decides, given its steps.
type Move struct {
	// Queue are the indexes (into the steps given) of pending steps to queue now: every pending
	// step of the current phase, so that the jobs of a phase run in parallel.
	Queue []int
	// Hold are pending steps that will never run because a phase before theirs failed.
	Hold []int
	// Cancel are pending or queued steps of a canceling run.
	Cancel []int
	// Done is true when the run is over, in state Final.
	Done  bool
	Final RunState
}

// Advance decides a run's next move from its state and its steps (in position order). Phases run
// in order; a phase is over when every step of it is terminal; a phase that ends with a failure
// holds every later step and fails the run. A canceling run cancels whatever has not started
// and ends canceled once nothing runs any more.
func Advance(state RunState, steps []Step) Move {
	var m Move
	if state.Terminal() {
		m.Done, m.Final = true, state
		return m
	}
	if state == RunCanceling {
		running := false
		for i, s := range steps {
			switch s.State {
			case StepPending, StepQueued:
				m.Cancel = append(m.Cancel, i)
			case StepRunning:
				running = true
			}
		}
		if !running {
			m.Done, m.Final = true, RunCanceled
		}
		return m
	}
	failed := false
	for _, phase := range phasesOf(steps) {
		busy := false
		for _, i := range phase {
			if !steps[i].State.Terminal() {
				busy = true
			}
		}
		if failed {
			for _, i := range phase {
				if steps[i].State == StepPending {
					m.Hold = append(m.Hold, i)
				}
			}
			continue
		}
		if busy {
			for _, i := range phase {
				if steps[i].State == StepPending {
					m.Queue = append(m.Queue, i)
				}
			}
			return m
		}
		for _, i := range phase {
			if steps[i].State == StepFailed || steps[i].State == StepCanceled {
				failed = true
			}
		}
	}
	m.Done, m.Final = true, RunSucceeded
	if failed {
		m.Final = RunFailed
	}
	return m
}

// phasesOf groups step indexes by phase, in ascending phase order.
func phasesOf(steps []Step) [][]int {
	var out [][]int
	index := map[int]int{}
	var order []int
	for i, s := range steps {
		k, ok := index[s.Phase]
		if !ok {
			k = len(out)
			index[s.Phase] = k
			out = append(out, nil)
			order = append(order, s.Phase)
		}
		out[k] = append(out[k], i)
	}
	// Steps are written phase by phase, but do not rely on it.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && order[j] < order[j-1]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
