package ctrl

import (
	"fmt"
	"os"
	"strings"
)

// TokenEnv is the environment variable that holds the shared token when
// no token file is named.
const TokenEnv = "RDMARUN_TOKEN"

// ReadToken returns the shared token from file, or from $RDMARUN_TOKEN
// when file is empty. A token file must not be empty: an empty one would
// silently turn authentication off.
func ReadToken(file string) (string, error) {
	if file == "" {
		return os.Getenv(TokenEnv), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return t, nil
}
