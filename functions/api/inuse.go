package api

import (
	"errors"
	"strings"

	"horizon/shared/horizon"
	"horizon/shared/problem"
)

// InUse turns the *horizon.InUseError of a catalogue delete into the 409 that names what uses
// the object, followed by advice ("take it out of those first."); other errors are returned as
// they are. Catalogue deletes are for admins, who see every team: the users are named.
func InUse(err error, what, advice string) error {
	var inUse *horizon.InUseError
	if !errors.As(err, &inUse) {
		return err
	}
	return problem.Conflict("%s is used by %s: %s", what, strings.Join(inUse.Users, ", "), advice)
}
