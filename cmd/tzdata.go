package cmd

// NOTE: the time zone database is linked into every lockctl binary, so
// times print the same in the container image (an empty base, no
// /usr/share/zoneinfo) as on a workstation; it adds about 450 KB.
import _ "time/tzdata"
