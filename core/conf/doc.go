// Package conf is what configuration checks and secret handling share across core, the
// channels and cmd/plangate: errors that name the config key they are about (KeyError,
// which the loader turns into a message with the file's line) and the Scrubber that keeps
// secrets out of error text and logs. It imports only the standard library.
package conf
