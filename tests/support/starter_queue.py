"""A starter setup as users write it: flavor ``default-flavor``, ClusterQueue ``cluster-queue`` with 4 cpu for
every namespace, LocalQueue ``user-queue`` in ``default``, and a 1-cpu Job queued there. The install tests
(in cluster and out of cluster) run it after installing.
"""

QUOTA = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cluster-queue}
"""

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: sample-job
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox, command: ["true"], resources: {requests: {cpu: "1"}}}
"""
