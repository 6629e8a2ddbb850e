// A kube-apiserver static pod shaped as kubeadm writes it (the parts the
// kubeadm patch touches: the command, the named port `probe-port` its probes
// use, the advertise-address annotation), for node `ip`.
import type { JsonObject } from '../../src/xds/bootstrap.js';

export function kubeadmApiserverPod(ip: string, image: string): JsonObject {
  const probe = (path: string, failureThreshold: number): JsonObject => ({
    httpGet: { host: ip, path, port: 'probe-port', scheme: 'HTTPS' },
    initialDelaySeconds: 10,
    periodSeconds: 10,
    timeoutSeconds: 15,
    failureThreshold,
  });
  const pki = '/etc/kubernetes/pki';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'kube-apiserver',
      namespace: 'kube-system',
      labels: { component: 'kube-apiserver', tier: 'control-plane' },
      annotations: { 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': `${ip}:6443` },
    },
    spec: {
      hostNetwork: true,
      priorityClassName: 'system-node-critical',
      securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'kube-apiserver',
          image,
          imagePullPolicy: 'IfNotPresent',
          command: [
            'kube-apiserver',
            `--advertise-address=${ip}`,
            '--authorization-mode=Node,RBAC',
            `--client-ca-file=${pki}/ca.crt`,
            '--etcd-servers=https://127.0.0.1:2379',
            '--secure-port=6443',
            `--tls-cert-file=${pki}/apiserver.crt`,
            `--tls-private-key-file=${pki}/apiserver.key`,
            `--requestheader-client-ca-file=${pki}/front-proxy-ca.crt`,
            '--requestheader-allowed-names=front-proxy-client',
            '--requestheader-username-headers=X-Remote-User',
            '--requestheader-group-headers=X-Remote-Group',
            '--requestheader-extra-headers-prefix=X-Remote-Extra-',
            `--proxy-client-cert-file=${pki}/front-proxy-client.crt`,
            `--proxy-client-key-file=${pki}/front-proxy-client.key`,
          ],
          ports: [{ name: 'probe-port', containerPort: 6443, protocol: 'TCP' }],
          livenessProbe: probe('/livez', 8),
          readinessProbe: probe('/readyz', 3),
          startupProbe: probe('/livez', 24),
          resources: { requests: { cpu: '250m' } },
          volumeMounts: [{ name: 'k8s-certs', mountPath: pki, readOnly: true }],
        },
      ],
      volumes: [{ name: 'k8s-certs', hostPath: { path: pki, type: 'DirectoryOrCreate' } }],
    },
  };
}
