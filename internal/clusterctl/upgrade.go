package clusterctl

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// CheckUpgrade tells whether a provider may move from installedVersion to
// desiredVersion. A first install ("" installed), an upgrade and a patch
// downgrade within the same minor are allowed. A downgrade to an older
// major.minor is refused, as clusterctl refuses it: a newer minor may have
// changed CRD storage versions and migrated stored objects, which the older
// controllers cannot read back.
func CheckUpgrade(installedVersion, desiredVersion string) error {
	desired, err := parseVersion(desiredVersion)
	if err != nil {
		return fmt.Errorf("desired version: %w", err)
	}
	if installedVersion == "" {
		return nil
	}
	installed, err := parseVersion(installedVersion)
	if err != nil {
		return fmt.Errorf("installed version: %w", err)
	}
	if desired.Major() > installed.Major() ||
		(desired.Major() == installed.Major() && desired.Minor() >= installed.Minor()) {
		return nil
	}
	return fmt.Errorf("downgrading from %s to %s crosses minor versions (v%d.%d → v%d.%d), which Cluster API does not support: "+
		"set the version back to v%d.%d.x or later (patch downgrades within v%d.%d are allowed)",
		installedVersion, desiredVersion, installed.Major(), installed.Minor(), desired.Major(), desired.Minor(),
		installed.Major(), installed.Minor(), installed.Major(), installed.Minor())
}

// parseVersion parses a semantic version with an optional leading v.
func parseVersion(version string) (*semver.Version, error) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v"))
	if err != nil {
		return nil, fmt.Errorf("%q is not a semantic version like v1.14.2: %w", version, err)
	}
	return v, nil
}
