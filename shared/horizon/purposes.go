package horizon

// Purposes of sealed columns (shared/secrets binds each ciphertext to one): a value sealed for
// one column does not open as another.
const (
	PurposeProxmoxTokenSecret   = "proxmox_servers.token_secret"
	PurposeProxmoxSSHPrivateKey = "proxmox_servers.ssh_private_key"
	PurposeSecretParameters     = "executions.secret_parameters"
	PurposeSecretOutputs        = "executions.secret_outputs"
	PurposeActionParameters     = "action_runs.secret_parameters"
	PurposeActionInputs         = "action_runs.secret_inputs"
	PurposeActionOutputs        = "action_runs.secret_outputs"
	PurposeInstanceVariables    = "action_instances.variables"
	PurposeHostKey              = "executions.host_key"
	PurposeDeployKey            = "deploy_keys.private_key"
	PurposeNagiosPassword       = "nagios_servers.password"
	PurposeNagiosSSHPrivateKey  = "nagios_servers.ssh_private_key"
	// PurposeTerraformState is followed by ":" and the workspace: a state opens only as its own.
	PurposeTerraformState = "terraform_states.state"
)
