package testenv

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNamespacePrefix(t *testing.T) {
	t.Parallel()
	dnsLabel := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	tests := []struct {
		name     string
		testName string
		want     string
	}{
		{name: "subtest", testName: "TestIntegrationAcquire/held_by_other", want: "testintegrationacquire-held-by-other-"},
		{name: "symbols folded", testName: "Test__A/b c.d", want: "test-a-b-c-d-"},
		{name: "leading symbols dropped", testName: "_/x", want: "x-"},
		{name: "nothing usable", testName: "__/", want: "test-"},
		{name: "long name cut", testName: "Test" + strings.Repeat("x", 100), want: "test" + strings.Repeat("x", 53) + "-"},
		{name: "cut at a dash", testName: strings.Repeat("a", 56) + "_b", want: strings.Repeat("a", 56) + "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := namespacePrefix(tt.testName)
			assert.Equal(t, tt.want, got, "prefix of %q", tt.testName)
			assert.LessOrEqual(t, len(got)+5, 63, "length with suffix for %q", tt.testName)
			assert.Regexp(t, dnsLabel, got+"abcde", "DNS label for %q", tt.testName)
		})
	}
}
