// kubeadm v1.36.3's render for the sandbox (src/tools/sandbox/kubeadmRender.ts,
// endpoint reconciler `none`), as it wrote the two container commands, for
// unit tests that must not run kubeadm. The e2e test compares running
// processes with a fresh render instead (test/e2e/kubeadmManifests.test.ts).
const PKI = '/etc/kubernetes/pki';

export const KUBEADM_APISERVER_COMMAND: readonly string[] = [
  'kube-apiserver',
  '--advertise-address=192.0.2.1',
  '--allow-privileged=true',
  '--authorization-mode=Node,RBAC',
  `--client-ca-file=${PKI}/ca.crt`,
  '--enable-admission-plugins=NodeRestriction',
  '--enable-bootstrap-token-auth=true',
  '--etcd-servers=http://127.0.0.1:2379',
  `--kubelet-client-certificate=${PKI}/apiserver-kubelet-client.crt`,
  `--kubelet-client-key=${PKI}/apiserver-kubelet-client.key`,
  '--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname',
  `--proxy-client-cert-file=${PKI}/front-proxy-client.crt`,
  `--proxy-client-key-file=${PKI}/front-proxy-client.key`,
  '--requestheader-allowed-names=front-proxy-client',
  `--requestheader-client-ca-file=${PKI}/front-proxy-ca.crt`,
  '--requestheader-extra-headers-prefix=X-Remote-Extra-',
  '--requestheader-group-headers=X-Remote-Group',
  '--requestheader-username-headers=X-Remote-User',
  '--secure-port=6443',
  '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
  `--service-account-key-file=${PKI}/sa.pub`,
  `--service-account-signing-key-file=${PKI}/sa.key`,
  '--service-cluster-ip-range=10.0.0.0/24',
  `--tls-cert-file=${PKI}/apiserver.crt`,
  `--tls-private-key-file=${PKI}/apiserver.key`,
  '--secure-port=6444',
  '--requestheader-uid-headers=X-Remote-Uid',
  '--endpoint-reconciler-type=none',
];

export const KUBEADM_CONTROLLER_MANAGER_COMMAND: readonly string[] = [
  'kube-controller-manager',
  '--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf',
  '--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf',
  '--bind-address=127.0.0.1',
  `--client-ca-file=${PKI}/ca.crt`,
  '--cluster-name=kubernetes',
  `--cluster-signing-cert-file=${PKI}/ca.crt`,
  `--cluster-signing-key-file=${PKI}/ca.key`,
  '--controllers=*,bootstrapsigner,tokencleaner',
  '--kubeconfig=/etc/kubernetes/controller-manager.conf',
  '--leader-elect=true',
  `--requestheader-client-ca-file=${PKI}/front-proxy-ca.crt`,
  `--root-ca-file=${PKI}/ca.crt`,
  `--service-account-private-key-file=${PKI}/sa.key`,
  '--use-service-account-credentials=true',
];
