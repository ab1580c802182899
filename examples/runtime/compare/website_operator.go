// api/v1alpha1/website_types.go (plus groupversion_info.go, and zz_generated.deepcopy.go and
// the CRD from controller-gen)
package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type WebsiteSpec struct {
	Image string `json:"image"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=1
	Replicas int32 `json:"replicas,omitempty"`
}

type WebsiteStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WebsiteSpec   `json:"spec"`
	Status            WebsiteStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

func init() { SchemeBuilder.Register(&Website{}, &WebsiteList{}) }

// main.go
package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"example.com/website/api/v1alpha1"
)

type reconciler struct {
	client.Client
	events record.EventRecorder
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var site v1alpha1.Website
	if err := r.Get(ctx, req.NamespacedName, &site); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	labels := map[string]string{"app.kubernetes.io/name": site.Name}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: site.Name, Namespace: site.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Labels = labels
		dep.Spec.Replicas = &site.Spec.Replicas
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		dep.Spec.Template.Labels = labels
		dep.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: site.Spec.Image}}
		return controllerutil.SetControllerReference(&site, dep, r.Scheme())
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	old := site.Status.DeepCopy()
	ready := dep.Status.ReadyReplicas
	site.Status.ReadyReplicas = ready
	cond := metav1.Condition{Type: "Available", Status: metav1.ConditionFalse,
		Reason: "ReplicasNotReady", ObservedGeneration: site.Generation,
		Message: fmt.Sprintf("%d/%d replicas ready", ready, site.Spec.Replicas)}
	if ready >= site.Spec.Replicas {
		cond.Status, cond.Reason = metav1.ConditionTrue, "MinimumReplicasAvailable"
	}
	if meta.SetStatusCondition(&site.Status.Conditions, cond) {
		kind := corev1.EventTypeWarning
		if cond.Status == metav1.ConditionTrue {
			kind = corev1.EventTypeNormal
		}
		r.events.Event(&site, kind, cond.Reason, cond.Message)
	}
	if equality.Semantic.DeepEqual(old, &site.Status) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.Status().Update(ctx, &site)
}

func main() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Website{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Complete(&reconciler{mgr.GetClient(), mgr.GetEventRecorderFor("website")})
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
