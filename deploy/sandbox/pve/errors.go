package pve

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is an answer in one of the shapes pveproxy uses for failures. A handler returns
// it as an error; the router writes it.
type apiError struct {
	status int
	// message is PVE's text. Its first line is also the reason phrase of the status line
	// (pveproxy puts it there, and clients such as go-proxmox read it from there).
	message string
	// errors holds per-parameter problems (400 "Parameter verification failed.").
	errors map[string]string
	// noBody answers without a JSON body, as pveproxy does for authentication failures and
	// for requests it could not proxy to another node.
	noBody bool
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s", e.status, strings.TrimSpace(e.message))
}

// reason returns the reason phrase: the message's first line.
func (e *apiError) reason() string {
	first, _, _ := strings.Cut(strings.TrimSpace(e.message), "\n")
	if first == "" {
		return http.StatusText(e.status)
	}
	return first
}

// failf is PVE's answer to a handler that dies with a message: 500 and the text.
func failf(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf(format, args...) + "\n"}
}

// paramErrors is PVE's 400 for one or more invalid parameters.
func paramErrors(errs map[string]string) *apiError {
	return &apiError{status: http.StatusBadRequest, message: "Parameter verification failed.\n", errors: errs}
}

// paramErr is paramErrors for a single parameter.
func paramErr(name, format string, args ...any) *apiError {
	return paramErrors(map[string]string{name: fmt.Sprintf(format, args...)})
}

// unauthorized is pveproxy's 401: no body, the reason in the status line.
func unauthorized(reason string) *apiError {
	return &apiError{status: http.StatusUnauthorized, message: reason, noBody: true}
}

// Messages PVE's JSON schema validator uses; clients and people recognise them.
const (
	msgMissing    = "property is missing and it is not optional"
	msgNotDefined = "property is not defined in schema and the schema does not allow additional properties"
)
