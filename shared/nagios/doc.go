// Package nagios is how Horizon talks to a Nagios Core 4 server (as Debian's nagios4 ships it):
// it reads through the web CGIs and writes one object file per stack over SSH.
//
// Decisions a newcomer would otherwise rediscover:
//
//   - Reads go through objectjson.cgi with the registered URL (the CGI base, e.g.
//     https://nagios.example.org/cgi-bin/nagios4), username and password. The first request is
//     sent without credentials; the server's 401 challenge says which scheme it wants (Basic or
//     Digest, both used by Debian's Apache setups), and the request is repeated with it. A 401 after
//     that is ErrUnauthorized; a transport failure or a 5xx is ErrUnavailable.
//   - query=hostgrouplist leaves out host groups that have no member, so a host group is checked
//     with query=hostgroup&hostgroup=NAME (HostgroupExists), never against the list alone.
//   - Writes need file access, which the CGIs do not give: Publish connects over SSH (host key
//     pinned, see shared/sshx) and owns exactly one directory (e.g. /etc/nagios4/conf.d/horizon),
//     one file per stack, "horizon-<stack id>.cfg". It reads the current file, uploads the new one
//     (sshx.Upload writes a temporary name and renames it into place), runs the verify command
//     (nagios4 -v); when verification fails it puts the previous file back (or removes the new one)
//     and fails with Nagios's own error line, so Nagios is never reloaded onto a broken
//     configuration. Then it runs the reload command. Publishing nil contents removes the file
//     (unpublish), verified and reloaded the same way.
//   - The caller keeps publishes to one server from overlapping: two verifications running at once
//     would each see the other's half-finished file.
package nagios
