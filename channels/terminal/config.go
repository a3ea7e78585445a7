package terminal

// Config configures the terminal channel: the channels.terminal section of the config
// file (decoded strictly by the yaml tags) and, untagged, the command line's settings.
type Config struct {
	// Enabled lists the terminal among the configured channels; New does not look at it.
	Enabled bool `yaml:"enabled"`
	// AttachmentsDir is where attachments that exist only in memory are saved. A relative
	// path in the file starts at the config file's directory; the loader sets it to the
	// plans directory when the file leaves it empty.
	AttachmentsDir string `yaml:"attachments_dir" config:"path"`

	Session string `yaml:"-"` // Address.Chat, the --session name; default "main"
	Sender  string `yaml:"-"` // sender id and name of lines without a "!name" prefix; default "local"
}

// Defaults is the section a config file that leaves it out gets.
func Defaults() Config {
	return Config{Enabled: true}
}

// Validate checks the section; the terminal has nothing the YAML types do not check.
func (c Config) Validate() error { return nil }

// Describe summarises the channel for `plangate config check`.
func (c Config) Describe() string { return Name }
