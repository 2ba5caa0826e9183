package k8s_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

// A fenced resource is a ConfigMap with the label fencedLabel: a
// ValidatingAdmissionPolicy (fencePolicy) makes the API server refuse an
// update whose data.fence is lower than the stored one. A job passes its
// lock's token with each write and the server, not the job, compares: a
// holder paused past its lock (SIGSTOP) cannot overwrite what a later holder
// wrote, however late its write arrives.
const (
	fencedLabel  = "shedlock-go.github.io/fenced"
	fenceRefusal = "stale fencing token"
)

// fencePolicy is the CEL rule: an update keeps or raises data.fence.
const fencePolicy = `!has(oldObject.data) || !('fence' in oldObject.data) || ` +
	`(has(object.data) && 'fence' in object.data && int(object.data['fence']) >= int(oldObject.data['fence']))`

// installFencePolicy installs the policy and its binding on s, and waits
// until the server enforces it in namespace ns.
func installFencePolicy(ctx context.Context, s *kubeapiserver.Server, ns string) error {
	policy, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": "shedlock-fence"},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []string{""}, "apiVersions": []string{"v1"}, "operations": []string{"UPDATE"}, "resources": []string{"configmaps"},
			}}},
			"validations": []any{map[string]any{"expression": fencePolicy, "message": fenceRefusal}},
		},
	})
	binding, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "shedlock-fence"},
		"spec": map[string]any{
			"policyName": "shedlock-fence", "validationActions": []string{"Deny"},
			"matchResources": map[string]any{"objectSelector": map[string]any{"matchLabels": map[string]string{fencedLabel: "true"}}},
		},
	})
	base := "/apis/admissionregistration.k8s.io/v1/"
	for _, w := range []struct {
		path string
		body []byte
	}{{base + "validatingadmissionpolicies", policy}, {base + "validatingadmissionpolicybindings", binding}} {
		if _, err := s.Do(ctx, http.MethodPost, w.path, w.body); err != nil && !strings.Contains(err.Error(), ": 409:") {
			return err
		}
	}
	return waitFenced(ctx, s, ns)
}

// waitFenced polls until a write with a lower token to a fenced probe is
// refused: the policy reaches the admission chain through informers, and a
// lower token applied meanwhile lowers the probe's, so each try raises it
// first.
func waitFenced(ctx context.Context, s *kubeapiserver.Server, ns string) error {
	c := newAdminClientset(s)
	if err := createFenced(ctx, c, ns, "fence-probe"); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for high := int64(2); ; high++ {
		if st, err := fencedPatch(ctx, c, ns, "fence-probe", high, nil); st != "ok" {
			return fmt.Errorf("fence probe: %s: %v", st, err)
		}
		st, err := fencedPatch(ctx, c, ns, "fence-probe", 1, nil)
		if st == "fenced" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the fence policy is not enforced after 30s: %s, %v", st, err)
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
}

func newAdminClientset(s *kubeapiserver.Server) kubernetes.Interface {
	c, err := kubernetes.NewForConfig(restConfig(s, kubeapiserver.Admin, nil))
	if err != nil {
		panic(err) // only for a malformed config, which restConfig does not make
	}
	return c
}

// createFenced creates the fenced ConfigMap name with token 0 and an empty
// value, unless it exists.
func createFenced(ctx context.Context, c kubernetes.Interface, ns, name string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fencedLabel: "true"}},
		Data:       map[string]string{"fence": "0", "value": ""},
	}
	_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createUnfenced creates the ConfigMap name, which no fence guards.
func createUnfenced(ctx context.Context, c kubernetes.Interface, ns, name string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"fence": "0"}}
	_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// fencedPatch writes data and fence into the ConfigMap name by a merge patch
// that carries no resourceVersion: nothing but the fence guards it. Its
// status: ok (applied), fenced (refused: a later token is stored), unknown
// (no answer: it may have been applied).
func fencedPatch(ctx context.Context, c kubernetes.Interface, ns, name string, fence int64, data map[string]string) (string, error) {
	d := map[string]string{"fence": strconv.FormatInt(fence, 10)}
	for k, v := range data {
		d[k] = v
	}
	body, _ := json.Marshal(map[string]any{"data": d})
	_, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	switch {
	case err == nil:
		return "ok", nil
	case strings.Contains(err.Error(), fenceRefusal):
		return "fenced", err
	}
	return "unknown", err
}
