package plane

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// UserConfig returns a REST config authenticated as user in groups (a
// client certificate of the plane's CA), so the audit log tells its writes
// from the admin user's, which the Flux controllers and certsim share.
// Group system:masters makes the user cluster-admin.
func (p *Plane) UserConfig(user string, groups ...string) (*rest.Config, error) {
	path, err := p.api.componentKubeconfig(user, groups...)
	if err != nil {
		return nil, err
	}
	return clientcmd.BuildConfigFromFlags("", path)
}

// AdminUser is the user of Plane.Config, which the Flux controllers and
// the certsim stand-in for cert-manager use too.
const AdminUser = adminUser
