package clusterctl

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// metadataAPIVersion and metadataKind identify a clusterctl metadata.yaml.
const (
	metadataAPIVersion = "clusterctl.cluster.x-k8s.io/v1alpha3"
	metadataKind       = "Metadata"
)

// ReleaseSeries maps the releases major.minor.* of a provider to the Cluster
// API contract they implement.
type ReleaseSeries struct {
	Major    int32  `json:"major"`
	Minor    int32  `json:"minor"`
	Contract string `json:"contract"`
}

// Metadata is a provider's metadata.yaml: which contract each release
// series implements.
type Metadata struct {
	ReleaseSeries []ReleaseSeries `json:"releaseSeries"`
}

// metadataFile is the on-disk shape, with its type identification.
type metadataFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   `json:",inline"`
}

// ParseMetadata reads a clusterctl metadata.yaml
// (apiVersion clusterctl.cluster.x-k8s.io/v1alpha3, kind Metadata).
// Unknown fields are ignored so that newer files still parse.
func ParseMetadata(data []byte) (*Metadata, error) {
	var file metadataFile
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("metadata.yaml is not valid YAML: %w", err)
	}
	if file.APIVersion != metadataAPIVersion || file.Kind != metadataKind {
		return nil, fmt.Errorf("metadata.yaml has apiVersion %q and kind %q, expected %s %s: is it a clusterctl metadata file?",
			file.APIVersion, file.Kind, metadataAPIVersion, metadataKind)
	}
	if len(file.ReleaseSeries) == 0 {
		return nil, errors.New("metadata.yaml lists no releaseSeries: the provider must map its major.minor releases to a Cluster API contract")
	}
	for i, s := range file.ReleaseSeries {
		if s.Contract == "" {
			return nil, fmt.Errorf("metadata.yaml releaseSeries[%d] (v%d.%d) has no contract", i, s.Major, s.Minor)
		}
	}
	return &file.Metadata, nil
}

// ContractFor returns the contract of the release series with the same
// major.minor as version (e.g. v1.14.2 → the 1.14 series).
func (m *Metadata) ContractFor(version string) (string, error) {
	v, err := parseVersion(version)
	if err != nil {
		return "", err
	}
	for _, s := range m.ReleaseSeries {
		if uint64(s.Major) == v.Major() && uint64(s.Minor) == v.Minor() {
			return s.Contract, nil
		}
	}
	series := make([]string, 0, len(m.ReleaseSeries))
	for _, s := range m.ReleaseSeries {
		series = append(series, fmt.Sprintf("v%d.%d (%s)", s.Major, s.Minor, s.Contract))
	}
	return "", fmt.Errorf("metadata.yaml has no release series for version %s (v%d.%d); it lists %s: the artifact may belong to another version, or its metadata.yaml is outdated",
		version, v.Major(), v.Minor(), strings.Join(series, ", "))
}

// CheckContractCompatible tells whether a provider implementing
// providerContract can run with a core provider implementing coreContract.
// Equal contracts are compatible, and so is a v1beta1 provider with a
// v1beta2 core: Cluster API v1.11+ still reads v1beta1 provider objects
// through its contract adapters.
func CheckContractCompatible(coreContract, providerContract string) error {
	switch {
	case coreContract == "" || providerContract == "":
		return fmt.Errorf("cannot compare contracts: core contract %q, provider contract %q (both must come from metadata.yaml)", coreContract, providerContract)
	case coreContract == providerContract:
		return nil
	case coreContract == "v1beta2" && providerContract == "v1beta1":
		return nil
	}
	return fmt.Errorf("the provider implements Cluster API contract %s but the core provider implements %s: choose a provider version whose metadata.yaml maps it to %s, or a core provider version for contract %s",
		providerContract, coreContract, coreContract, providerContract)
}
