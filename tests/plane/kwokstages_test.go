package plane

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestUnpullableImagesBackOff: kwok makes a pod Ready whatever its image,
// except one with an image on a .invalid host, which stays Pending in
// ImagePullBackOff as a real kubelet reports it. A Deployment rolled to
// such an image keeps its old pod serving (kube-controller-manager's
// rolling update) and rolls back to Available when the template goes back.
func TestUnpullableImagesBackOff(t *testing.T) {
	bin := binDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p, err := Start(ctx, Options{BinDir: bin, RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	client, err := kubernetes.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	const (
		ns   = "default"
		good = "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2"
		bad  = "registry.invalid/cluster-api/cluster-api-controller:v1.14.3"
	)
	deployments := client.AppsV1().Deployments(ns)
	labels := map[string]string{"app": "pull"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: good}}},
			},
		},
	}
	if _, err := deployments.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setImage := func(image string) {
		t.Helper()
		d, err := deployments.Get(ctx, "pull", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// waitFor polls until check passes, failing with what it last said.
	waitFor := func(what string, check func() string) {
		t.Helper()
		start, last := time.Now(), ""
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			last = check()
			return last == "", nil
		})
		if err != nil {
			t.Fatalf("%s: %s", what, last)
		}
		t.Logf("%s after %s", what, time.Since(start).Round(time.Millisecond))
	}
	deployment := func(want func(*appsv1.Deployment) bool) string {
		d, err := deployments.Get(ctx, "pull", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if d.Status.ObservedGeneration == d.Generation && want(d) {
			return ""
		}
		return deploymentState(d)
	}
	available := func(d *appsv1.Deployment) bool {
		return d.Status.Replicas == 1 && d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1 &&
			d.Status.UnavailableReplicas == 0 && deploymentCondition(d, appsv1.DeploymentAvailable) == corev1.ConditionTrue
	}

	// (1) A normal image: Available, as ever.
	waitFor("the Deployment with a pullable image Available", func() string { return deployment(available) })

	// (2) Rolled to an image on a .invalid host: the new pod backs off,
	// the old one keeps serving.
	setImage(bad)
	waitFor("the rollout to the unpullable image stuck, the old pod serving", func() string {
		return deployment(func(d *appsv1.Deployment) bool {
			return d.Status.Replicas == 2 && d.Status.UpdatedReplicas == 1 && d.Status.UnavailableReplicas == 1 &&
				d.Status.AvailableReplicas == 1 && deploymentCondition(d, appsv1.DeploymentAvailable) == corev1.ConditionTrue
		})
	})
	var newPod *corev1.Pod
	waitFor("the new pod in ImagePullBackOff", func() string {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=pull"})
		if err != nil {
			return err.Error()
		}
		var states []string
		newPod = nil
		for i := range pods.Items {
			pod := &pods.Items[i]
			states = append(states, podState(pod))
			switch pod.Spec.Containers[0].Image {
			case good:
				if podCondition(pod, corev1.PodReady) != corev1.ConditionTrue || pod.Status.Phase != corev1.PodRunning {
					return "old pod not serving: " + strings.Join(states, "; ")
				}
			case bad:
				if backingOff(pod, "manager", bad) == "" {
					newPod = pod
				}
			}
		}
		if len(pods.Items) != 2 || newPod == nil {
			return strings.Join(states, "; ")
		}
		return ""
	})
	if c := findCondition(newPod, corev1.ContainersReady); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" {
		t.Errorf("ContainersReady of the backing-off pod: %+v", c)
	}
	// It stays so, and kwok does not patch it over and over.
	time.Sleep(3 * time.Second)
	again, err := client.CoreV1().Pods(ns).Get(ctx, newPod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != newPod.ResourceVersion {
		t.Errorf("the backing-off pod changed in 3 s (resourceVersion %s → %s): %s", newPod.ResourceVersion, again.ResourceVersion, podState(again))
	}
	if msg := deployment(func(d *appsv1.Deployment) bool {
		return d.Status.UpdatedReplicas == 1 && d.Status.UnavailableReplicas == 1
	}); msg != "" {
		t.Errorf("the stuck rollout moved: %s", msg)
	}

	// (3) Back to the pullable image: fully updated and Available.
	setImage(good)
	waitFor("the Deployment back on the pullable image Available", func() string {
		if msg := deployment(available); msg != "" {
			return msg
		}
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=pull"})
		if err != nil {
			return err.Error()
		}
		if len(pods.Items) != 1 || pods.Items[0].Spec.Containers[0].Image != good || podCondition(&pods.Items[0], corev1.PodReady) != corev1.ConditionTrue {
			var states []string
			for i := range pods.Items {
				states = append(states, podState(&pods.Items[i]))
			}
			return "pods: " + strings.Join(states, "; ")
		}
		return ""
	})

	// An init container on a .invalid host (with a port) holds up the
	// pod's other containers, as on a kubelet.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "init-pull"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "fetch", Image: "mirror.registry.invalid:5000/busybox:1"}},
			Containers:     []corev1.Container{{Name: "manager", Image: good}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the pod with an unpullable init container in ImagePullBackOff", func() string {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, "init-pull", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if msg := backingOff(pod, "fetch", "mirror.registry.invalid:5000/busybox:1"); msg != "" {
			return msg
		}
		if c := findCondition(pod, corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" {
			return fmt.Sprintf("Initialized %+v", c)
		}
		if s := pod.Status.ContainerStatuses; len(s) != 1 || s[0].Ready || s[0].State.Waiting == nil || s[0].State.Waiting.Reason != "PodInitializing" {
			return fmt.Sprintf("containerStatuses %+v", s)
		}
		return ""
	})
}

// backingOff tells what keeps pod from being in ImagePullBackOff on
// container's image, as a kubelet reports it; "" when it is.
func backingOff(pod *corev1.Pod, container, image string) string {
	if pod.Status.Phase != corev1.PodPending || podCondition(pod, corev1.PodReady) != corev1.ConditionFalse {
		return podState(pod)
	}
	for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if s.Name != container {
			continue
		}
		if w := s.State.Waiting; w != nil && w.Reason == "ImagePullBackOff" && !s.Ready && s.Image == image &&
			strings.HasPrefix(w.Message, fmt.Sprintf("Back-off pulling image %q", image)) {
			return ""
		}
		return fmt.Sprintf("%s: container %s: %+v", pod.Name, container, s)
	}
	return fmt.Sprintf("%s: no status for container %s: %s", pod.Name, container, podState(pod))
}

func findCondition(pod *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	return findCondition(pod, t).Status
}

func podState(pod *corev1.Pod) string {
	var containers []string
	for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		state := "?"
		switch {
		case s.State.Waiting != nil:
			state = "waiting " + s.State.Waiting.Reason
		case s.State.Running != nil:
			state = "running"
		case s.State.Terminated != nil:
			state = "terminated " + s.State.Terminated.Reason
		}
		containers = append(containers, fmt.Sprintf("%s %s ready=%t", s.Name, state, s.Ready))
	}
	return fmt.Sprintf("%s (%s) %s Ready=%s [%s]", pod.Name, pod.Spec.Containers[0].Image, pod.Status.Phase,
		podCondition(pod, corev1.PodReady), strings.Join(containers, ", "))
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func deploymentState(d *appsv1.Deployment) string {
	return fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d unavailable %d, Available=%s",
		d.Generation, d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas,
		d.Status.AvailableReplicas, d.Status.UnavailableReplicas, deploymentCondition(d, appsv1.DeploymentAvailable))
}
