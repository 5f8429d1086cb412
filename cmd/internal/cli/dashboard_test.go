package cli

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

func TestValidateLoopDashboardAddress(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr    string
		wantErr string
	}{
		{addr: ""},
		{addr: "127.0.0.1:8081"},
		{addr: "[::1]:8081"},
		{addr: "localhost:8081"},
		{addr: ":8081", wantErr: `--dashboard-address ":8081" is not a loopback address`},
		{addr: "0.0.0.0:8081", wantErr: "use 127.0.0.1:8081 and reach it with kubectl port-forward"},
		{addr: "10.0.0.7:8081", wantErr: "is not a loopback address"},
		{addr: "8081", wantErr: `invalid --dashboard-address "8081"`},
	} {
		err := ValidateLoopDashboardAddress(tt.addr)
		if tt.wantErr == "" {
			assert.NoError(t, err, tt.addr)
			continue
		}
		require.Error(t, err, tt.addr)
		assert.Contains(t, err.Error(), tt.wantErr, tt.addr)
		assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), tt.addr)
	}
}

func TestExposedWarning(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}},
		{addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}},
		{addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8080}, want: "warning: serving the dashboard on 10.0.0.7:8080 with no authentication"},
		{addr: &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, want: "on every interface of this machine, port 8080, with no authentication"},
	} {
		got := ExposedWarning(tt.addr)
		if tt.want == "" {
			assert.Empty(t, got, tt.addr.String())
			continue
		}
		assert.Contains(t, got, tt.want, tt.addr.String())
	}
}
