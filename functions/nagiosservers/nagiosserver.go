// Package nagiosservers serves /v1/nagios-servers: the Nagios Core installations Horizon
// publishes machines to. Admins write; everyone reads. The password is sealed at rest and never
// returned.
package nagiosservers

import (
	"time"

	"github.com/google/uuid"

	"horizon/shared/horizon"
)

// NagiosServer is a Nagios server as the API shows it: without its password.
type NagiosServer struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Username  string    `json:"username"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toNagiosServer(n horizon.NagiosServer) NagiosServer {
	return NagiosServer{ID: n.ID, Name: n.Name, URL: n.URL, Username: n.Username, Version: n.Version,
		CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
}
