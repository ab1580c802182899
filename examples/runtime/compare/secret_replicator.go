package main

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	targetsKey = "example.kro.run/replicate-to"
	replicaOf  = "example.kro.run/replica-of"
	finalizer  = "example.kro.run/replicas"
)

type replicator struct{ client.Client }

func targetsOf(s *corev1.Secret) map[string]bool {
	out := map[string]bool{}
	for _, t := range strings.Split(s.Annotations[targetsKey], ",") {
		if t = strings.TrimSpace(t); t != "" && t != s.Namespace {
			out[t] = true
		}
	}
	return out
}

func (r *replicator) deleteCopies(ctx context.Context, s *corev1.Secret, keep map[string]bool) error {
	var copies corev1.SecretList
	if err := r.List(ctx, &copies, client.MatchingLabels{replicaOf: s.Namespace + "." + s.Name}); err != nil {
		return err
	}
	for i := range copies.Items {
		if c := &copies.Items[i]; !keep[c.Namespace] {
			if err := r.Delete(ctx, c); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

func (r *replicator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var src corev1.Secret
	if err := r.Get(ctx, req.NamespacedName, &src); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	targets := targetsOf(&src)
	if len(targets) == 0 || !src.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&src, finalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.deleteCopies(ctx, &src, nil); err != nil {
			return ctrl.Result{}, err
		}
		controllerutil.RemoveFinalizer(&src, finalizer)
		return ctrl.Result{}, r.Update(ctx, &src)
	}
	if controllerutil.AddFinalizer(&src, finalizer) {
		if err := r.Update(ctx, &src); err != nil {
			return ctrl.Result{}, err
		}
	}
	for ns := range targets {
		dst := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: ns}}
		_, err := controllerutil.CreateOrUpdate(ctx, r.Client, dst, func() error {
			dst.Labels = map[string]string{replicaOf: src.Namespace + "." + src.Name}
			dst.Type, dst.Data = src.Type, src.Data
			return nil
		})
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.deleteCopies(ctx, &src, targets)
}

func sourceOf(_ context.Context, o client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(o.GetLabels()[replicaOf], ".")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

func main() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Secret{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(sourceOf)).
		Complete(&replicator{mgr.GetClient()})
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
