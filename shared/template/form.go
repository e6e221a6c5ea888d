package template

// FormSchema is everything a frontend needs to draw a template version's creation form without
// knowing Terraform: the phases in order, and per job a JSON Schema (draft 2020-12) of the
// parameters of one execution, the attachments each execution needs, how many executions it may
// have and the jobs it depends on. It is served as JSON.
type FormSchema struct {
	Template    string       `json:"template"`
	Description string       `json:"description,omitempty"`
	Phases      []FormPhase  `json:"phases"`
	Actions     []FormAction `json:"actions,omitempty"`
}

// FormPhase is one phase of the form, its jobs in order.
type FormPhase struct {
	Name string    `json:"name"`
	Jobs []FormJob `json:"jobs"`
}

// FormJob is one job of the form.
type FormJob struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Machine     bool           `json:"machine"`
	Executions  FormExecutions `json:"executions"`
	// Attachments lists what each execution is given besides its parameters, in a fixed order.
	Attachments []Attachment `json:"attachments"`
	// DependsOn lists the jobs whose outputs this job uses, in template order.
	DependsOn []string `json:"depends_on"`
	// Parameters is the JSON Schema of one execution's answers.
	Parameters *Schema `json:"parameters"`
}

// FormExecutions is how many executions a job may have. A form starts a multiple job with
// max(Min, 1) executions.
type FormExecutions struct {
	Multiple bool `json:"multiple"`
	Min      int  `json:"min"`
	Max      int  `json:"max"`
}

// AttachmentKind is something the user picks for an execution from the catalogue.
type AttachmentKind string

// The attachment kinds.
const (
	AttachAddress         AttachmentKind = "address"           // a named address on a network
	AttachSSHKey          AttachmentKind = "ssh_key"           // a registered SSH public key
	AttachNode            AttachmentKind = "node"              // the Proxmox node
	AttachPool            AttachmentKind = "pool"              // the Proxmox resource pool
	AttachISO             AttachmentKind = "iso"               // a built ISO
	AttachNagiosHostGroup AttachmentKind = "nagios_host_group" // offered when a Nagios server is registered
	AttachNodeExporter    AttachmentKind = "node_exporter"     // install Node Exporter
	AttachStartupOrder    AttachmentKind = "startup_order"     // boot number; none boots last
)

// Attachment is one attachment an execution takes, and whether it must be given.
type Attachment struct {
	Kind     AttachmentKind `json:"kind"`
	Required bool           `json:"required"`
}

// FormAction is an action's form: its parameters and its inputs, pre-filled from the stack's
// outputs by the references given.
type FormAction struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Kind        ActionKind        `json:"kind"`
	Job         string            `json:"job,omitempty"`
	Inputs      map[string]string `json:"inputs,omitempty"`
	Parameters  *Schema           `json:"parameters"`
}

// Schema is the subset of JSON Schema 2020-12 the form uses. Properties is a map, so
// PropertyOrder ("x-horizon-order") gives the order to ask them in.
type Schema struct {
	Schema               string             `json:"$schema,omitempty"`
	Type                 string             `json:"type"`
	Title                string             `json:"title,omitempty"`
	Description          string             `json:"description,omitempty"`
	Properties           map[string]*Schema `json:"properties,omitempty"`
	PropertyOrder        []string           `json:"x-horizon-order,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	Enum                 []any              `json:"enum,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
	Default              any                `json:"default,omitempty"`
	// WriteOnly and Secret mark a secret: the frontend hides it and never gets it back.
	WriteOnly bool `json:"writeOnly,omitempty"`
	Secret    bool `json:"x-horizon-secret,omitempty"`
	// Generated: left empty, Horizon generates the value; so it is not required.
	Generated bool `json:"x-horizon-generate,omitempty"`
}

// Draft202012 is the $schema of every parameters schema.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// Form returns the form schema of a valid definition. mods may be empty; when a job's module is
// there, a parameter without a description takes its variable's.
func Form(d *Definition, mods Modules) FormSchema {
	deps := d.Dependencies()
	f := FormSchema{Template: d.Name, Description: d.Description, Phases: []FormPhase{}}
	for _, ph := range d.Phases {
		fp := FormPhase{Name: ph.Name, Jobs: []FormJob{}}
		for _, j := range ph.Jobs {
			lo, hi := j.Executions.Range()
			fp.Jobs = append(fp.Jobs, FormJob{
				Name:        j.Name,
				Description: j.Description,
				Machine:     j.Machine,
				Executions:  FormExecutions{Multiple: j.Executions.Multiple, Min: lo, Max: hi},
				Attachments: attachments(&j),
				DependsOn:   deps[j.Name],
				Parameters:  parametersSchema(j.Parameters, mods.Jobs[j.Name]),
			})
		}
		f.Phases = append(f.Phases, fp)
	}
	for _, a := range d.Actions {
		f.Actions = append(f.Actions, FormAction{
			Name: a.Name, Description: a.Description, Kind: a.Kind, Job: a.Job, Inputs: a.Inputs,
			Parameters: parametersSchema(a.Parameters, mods.Actions[a.Name]),
		})
	}
	return f
}

func attachments(j *Job) []Attachment {
	if !j.Machine {
		return []Attachment{}
	}
	as := []Attachment{
		{AttachAddress, true},
		{AttachSSHKey, true},
		{AttachNode, true},
		{AttachPool, true},
	}
	if j.ISO {
		as = append(as, Attachment{AttachISO, true})
	}
	return append(as,
		Attachment{AttachNagiosHostGroup, false},
		Attachment{AttachNodeExporter, false},
		Attachment{AttachStartupOrder, false},
	)
}

func parametersSchema(ps Parameters, mod *Module) *Schema {
	no := false
	s := &Schema{
		Schema:               Draft202012,
		Type:                 "object",
		Properties:           map[string]*Schema{},
		PropertyOrder:        []string{},
		Required:             []string{},
		AdditionalProperties: &no,
	}
	for _, pm := range ps {
		desc := pm.Description
		if desc == "" && mod != nil {
			if v := mod.Variable(pm.Name); v != nil {
				desc = v.Description
			}
		}
		s.Properties[pm.Name] = &Schema{
			Type:        string(pm.Type),
			Title:       pm.Name,
			Description: desc,
			Enum:        pm.Enum,
			Pattern:     pm.Pattern,
			Minimum:     pm.Minimum,
			Maximum:     pm.Maximum,
			Default:     pm.Default,
			WriteOnly:   pm.Secret,
			Secret:      pm.Secret,
			Generated:   pm.Generate,
		}
		s.PropertyOrder = append(s.PropertyOrder, pm.Name)
		if pm.Required() {
			s.Required = append(s.Required, pm.Name)
		}
	}
	return s
}
