// Package human writes values for people to read the same way everywhere
// lockctl shows them: the CLI's lines and tables and the dashboard's page.
package human

import (
	"fmt"
	"strings"
	"time"
)

// Duration renders d the way kubectl renders ages: 42s, 5m10s, 3h4m.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		s := d.Round(time.Second).String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		return s
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
