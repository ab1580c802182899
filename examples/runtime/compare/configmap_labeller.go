package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

const team = "example.kro.run/team"

type labeller struct{ client.Client }

func (r *labeller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, ok := cm.Annotations[team]
	if got, has := cm.Labels[team]; got == want && has == ok {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if !ok {
		delete(cm.Labels, team)
	} else if cm.Labels == nil {
		cm.Labels = map[string]string{team: want}
	} else {
		cm.Labels[team] = want
	}
	return ctrl.Result{}, r.Patch(ctx, &cm, patch)
}

func main() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	notSkipped := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, skip := o.GetLabels()["example.kro.run/skip"]
		return !skip
	})
	changed := predicate.Or(predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})
	err = ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithPredicates(changed)).
		WithEventFilter(notSkipped).
		Complete(&labeller{mgr.GetClient()})
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
