"""Seed 000's operator, as its write-up describes it, for the stacks benchmark: on
each new CrdKind, a Deployment of the chosen image and a NodePort Service, both
adopted (ownerReferences, and the request's labels) so deleting the request deletes
them, and a message in status. Any other choice is an error. Written the way kopf's
own examples write it: a synchronous handler with the official client, run with
kopf's defaults.

Run: kopf run --standalone --namespace NS seed000_operator.py
"""

import kopf
import kubernetes

IMAGES = {"mysql": ("mysql:8.0", 3306), "tomcat": ("tomcat:9.0", 8080)}


@kopf.on.startup()
def login(**_):
    kubernetes.config.load_kube_config()


@kopf.on.create("iksoon.test.com", "v1", "crdplural")
def create_fn(spec, name, namespace, **_):
    choice = spec.get("choice")
    if choice not in IMAGES:
        raise kopf.PermanentError(f"choice must be mysql or tomcat, not {choice!r}")
    image, port = IMAGES[choice]
    labels = {"app": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "replicas": spec.get("replicas", 1),
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": choice, "image": image, "ports": [{"containerPort": port}]}
                    ]
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {"type": "NodePort", "selector": labels, "ports": [{"port": port}]},
    }
    kopf.adopt([deployment, service])
    kubernetes.client.AppsV1Api().create_namespaced_deployment(namespace, deployment)
    kubernetes.client.CoreV1Api().create_namespaced_service(namespace, service)
    return {"message": f"{choice} deployment and service created"}
