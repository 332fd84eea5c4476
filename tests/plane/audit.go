package plane

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// auditPolicy records the metadata of write requests, and the watches
// opened on Cluster API's Clusters (which Capwright opens only when a
// Tenant or contract object needs them).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "Panic"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
  verbs: ["watch"]
  resources:
  - group: cluster.x-k8s.io
    resources: ["clusters"]
  omitStages: ["ResponseComplete"]
- level: None
`

// Write is one write request the API server completed (or, from Watches,
// one watch it started serving).
type Write struct {
	Time time.Time
	// User made the request: the impersonated user when another
	// (ImpersonatedBy, e.g. kustomize-controller applying as a
	// ServiceAccount) made it on that user's behalf.
	User           string
	ImpersonatedBy string
	Verb           string
	Resource       string
	Namespace      string
	Name           string
	Subresource    string
	Code           int
}

func (w Write) String() string {
	res := w.Resource
	if w.Subresource != "" {
		res += "/" + w.Subresource
	}
	return fmt.Sprintf("%s %s %s %s/%s (%d)", w.Time.Format(time.RFC3339Nano), w.Verb, res, w.Namespace, w.Name, w.Code)
}

// Writes returns the write requests of user completed after since, from the
// audit log (Options.AuditLog). Requests made impersonating user are
// user's.
func (p *Plane) Writes(user string, since time.Time) ([]Write, error) {
	return p.audited(user, since, func(verb string) bool { return verb != "watch" })
}

// Watches returns the watches of Clusters (cluster.x-k8s.io) user, or
// anyone when user is empty, opened after since, from the audit log
// (Options.AuditLog): the only watches it records.
func (p *Plane) Watches(user string, since time.Time) ([]Write, error) {
	return p.audited(user, since, func(verb string) bool { return verb == "watch" })
}

func (p *Plane) audited(user string, since time.Time, verb func(string) bool) ([]Write, error) {
	if !p.opts.AuditLog {
		return nil, errors.New("the plane was started without Options.AuditLog")
	}
	f, err := os.Open(filepath.Join(p.RunDir, "audit.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var writes []Write
	_, err = scanAudit(f, func(w Write) {
		if (user == "" || w.User == user) && verb(w.Verb) && !w.Time.Before(since) {
			writes = append(writes, w)
		}
	})
	return writes, err
}

// scanAudit calls each with every complete entry of the audit log r
// holds (a line without its newline is left for the next read), and
// returns the bytes it read up to the end of the last complete line.
func scanAudit(r io.Reader, each func(Write)) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var read int64
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return read, nil
		}
		if err != nil {
			return read, err
		}
		read += int64(len(line))
		var e struct {
			Verb string `json:"verb"`
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			ImpersonatedUser *struct {
				Username string `json:"username"`
			} `json:"impersonatedUser"`
			ObjectRef struct {
				Resource, Namespace, Name, Subresource string
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			StageTimestamp time.Time `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			continue
		}
		by := ""
		if e.ImpersonatedUser != nil {
			by = e.User.Username
			e.User.Username = e.ImpersonatedUser.Username
		}
		each(Write{Time: e.StageTimestamp, User: e.User.Username, ImpersonatedBy: by, Verb: e.Verb, Resource: e.ObjectRef.Resource,
			Namespace: e.ObjectRef.Namespace, Name: e.ObjectRef.Name, Subresource: e.ObjectRef.Subresource, Code: e.ResponseStatus.Code})
	}
}

// AuditTail reads the audit log (Options.AuditLog) a piece at a time: each
// Next returns only what was logged since the one before, so a long run
// (a soak) does not read the whole log again at every look.
type AuditTail struct {
	path   string
	offset int64
}

// AuditTail starts a tail of the audit log at its current end.
func (p *Plane) AuditTail() (*AuditTail, error) {
	if !p.opts.AuditLog {
		return nil, errors.New("the plane was started without Options.AuditLog")
	}
	t := &AuditTail{path: filepath.Join(p.RunDir, "audit.log")}
	if fi, err := os.Stat(t.path); err == nil {
		t.offset = fi.Size()
	}
	return t, nil
}

// Next returns the write requests (no watches) logged since the last
// call, of every user.
func (t *AuditTail) Next() ([]Write, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, err
	}
	var writes []Write
	n, err := scanAudit(f, func(w Write) {
		if w.Verb != "watch" {
			writes = append(writes, w)
		}
	})
	t.offset += n
	return writes, err
}

// CountWrites counts writes by "verb resource[/subresource]", the keys
// sorted.
func CountWrites(ws []Write) (counts map[string]int, keys []string) {
	counts = map[string]int{}
	for _, w := range ws {
		res := w.Resource
		if w.Subresource != "" {
			res += "/" + w.Subresource
		}
		counts[w.Verb+" "+res]++
	}
	keys = make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return counts, keys
}
