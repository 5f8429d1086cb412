package cli

import (
	"errors"
	"io"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
)

// ReadJob reads and parses the job file -f names, "-" meaning in. A bad
// file is a usage error.
func ReadJob(in io.Reader, name string) (*job.Job, error) {
	data, source, err := ReadJobFile(in, name)
	if err != nil {
		return nil, err
	}
	j, err := job.Parse(data, source)
	return j, cmdutil.UsageIfInvalid(err)
}

// ReadJobFile reads a job file, "-" meaning in (job.ReadFile). A file that
// cannot be read, and one too large, is a usage error.
func ReadJobFile(in io.Reader, name string) ([]byte, string, error) {
	data, source, err := job.ReadFile(name, in)
	if err != nil && (name != "-" || errors.As(err, new(*job.TooLargeError))) {
		return nil, "", &cmdutil.UsageError{Err: err}
	}
	return data, source, err
}
