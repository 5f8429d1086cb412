package job

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ReadFile reads the job file called name, "-" meaning stdin, and returns
// its data and the source name Parse reports errors by ("<stdin>" for
// stdin). It reads no more than MaxFileSize+1 bytes: a larger file is a
// *TooLargeError, refused before it is read into memory.
func ReadFile(name string, stdin io.Reader) ([]byte, string, error) {
	var tooLarge *TooLargeError
	if name == "-" {
		data, err := readLimited(stdin, "<stdin>")
		switch {
		case errors.As(err, &tooLarge):
			return nil, "", err
		case err != nil:
			return nil, "", fmt.Errorf("read stdin: %w", err)
		}
		return data, "<stdin>", nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, "", fmt.Errorf("read job file: %w", err)
	}
	defer file.Close()
	if st, err := file.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, "", &TooLargeError{Source: name, Size: st.Size()}
	}
	data, err := readLimited(file, name)
	switch {
	case errors.As(err, &tooLarge):
		return nil, "", err
	case err != nil:
		return nil, "", fmt.Errorf("read job file: %w", err)
	}
	return data, name, nil
}

// readLimited reads r to its end, or returns a *TooLargeError once it
// has read more than MaxFileSize bytes.
func readLimited(r io.Reader, source string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, &TooLargeError{Source: source}
	}
	return data, nil
}
