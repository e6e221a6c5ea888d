package terraform

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// inherited are the variables of the worker's environment that Terraform sees. Everything else
// is dropped: the worker's environment holds Horizon's own secrets (HORIZON_SECRET_KEY,
// database and Redis URLs), and a module's local-exec could read them.
var inherited = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// reserved are variables Horizon sets itself; neither the worker's environment nor a caller may
// supply them, nor any TF_HTTP_* (the state backend's settings). TF_DATA_DIR would move
// .terraform out of the work dir.
var reserved = []string{"TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", "CHECKPOINT_DISABLE"}

func isReserved(name string) bool {
	return slices.Contains(reserved, name) || strings.HasPrefix(name, "TF_HTTP_")
}

// buildEnv returns the complete environment of Terraform for one work dir (SetEnv replaces the
// environment as a whole): the inherited part of base, every TF_* variable of base that
// terraform-exec does not manage itself (TF_CLI_CONFIG_FILE, TF_TOKEN_*, …), then global and
// extra (extra wins), then the variables Horizon owns: state (the backend's grant) and the rest. An inherited TF_CLI_CONFIG_FILE naming
// a missing file is dropped. It returns an error when global or extra
// set a variable terraform-exec refuses (TF_VAR_*, TF_LOG, TF_WORKSPACE, …) or one Horizon owns.
func buildEnv(base []string, cfg Config, global, extra, state map[string]string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if slices.Contains(inherited, k) || strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "TF_") {
			env[k] = v
		}
	}
	tfexec.CleanEnv(env)
	// A CLI configuration file that does not exist is only a warning to Terraform, but OpenTofu
	// prints that warning on stdout ahead of `version -json`, which terraform-exec then cannot
	// parse. Without the variable both fall back to their default file, silently.
	if p, ok := env["TF_CLI_CONFIG_FILE"]; ok {
		if _, err := os.Stat(p); err != nil {
			delete(env, "TF_CLI_CONFIG_FILE")
		}
	}
	for k := range env {
		if isReserved(k) {
			delete(env, k)
		}
	}
	for _, set := range []map[string]string{global, extra} {
		for _, k := range slices.Sorted(maps.Keys(set)) {
			if p := tfexec.ProhibitedEnv(map[string]string{k: ""}); len(p) > 0 || isReserved(k) {
				return nil, fmt.Errorf("environment variable %s is managed by Horizon and cannot be set", k)
			}
		}
		maps.Copy(env, set)
	}
	maps.Copy(env, state)
	env["CHECKPOINT_DISABLE"] = "1"
	if cfg.PluginCacheDir != "" {
		env["TF_PLUGIN_CACHE_DIR"] = cfg.PluginCacheDir
	}
	return env, nil
}
