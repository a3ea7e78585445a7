package conf

import "errors"

// RetryPolicy is the retry_policy section: how many times plangate lets the agent try
// again after a failure of its own checks before it stops the turn and asks a person.
type RetryPolicy struct {
	// MaxVerifierRetries is how many failed runs of an executing plan's verification
	// commands go back to the agent before the turn stops with verification_failed; 0
	// stops at the first failure.
	MaxVerifierRetries int `yaml:"max_verifier_retries"`
}

// DefaultRetryPolicy is the section when the file does not set it.
var DefaultRetryPolicy = RetryPolicy{MaxVerifierRetries: 2}

// maxVerifierRetries bounds max_verifier_retries: each retry may run every check again.
const maxVerifierRetries = 20

// Validate checks the section.
func (r RetryPolicy) Validate() error {
	if n := r.MaxVerifierRetries; n < 0 || n > maxVerifierRetries {
		return errors.Join(Invalid("max_verifier_retries", "is %d: it must be between 0 and %d", n, maxVerifierRetries))
	}
	return nil
}
