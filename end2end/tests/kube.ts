// A tiny Kubernetes client for the browser tests: they change objects through the
// real API server and watch the page follow.
import { readFileSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import { join } from 'node:path';
import { expect } from '@playwright/test';

const kubeconfigPath =
  process.env.PORTICO_E2E_KUBECONFIG ?? join(__dirname, '..', '.state', 'kubeconfig.json');

export type KubeResponse = { status: number; body: any };

export class Kube {
  private agent: Agent;
  private server: URL;

  constructor() {
    const cfg = JSON.parse(readFileSync(kubeconfigPath, 'utf8'));
    const cluster = cfg.clusters[0].cluster;
    const user = cfg.users[0].user;
    const b64 = (s: string) => Buffer.from(s, 'base64');
    this.server = new URL(cluster.server);
    this.agent = new Agent({
      ca: b64(cluster['certificate-authority-data']),
      cert: b64(user['client-certificate-data']),
      key: b64(user['client-key-data']),
    });
  }

  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<KubeResponse> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          host: this.server.hostname,
          port: this.server.port,
          path,
          method,
          agent: this.agent,
          headers: {
            accept: 'application/json',
            ...(payload ? { 'content-type': 'application/json' } : {}),
            ...headers,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => {
            let parsed: any = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.on('error', reject);
      if (payload) req.write(payload);
      req.end();
    });
  }

  async ok(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<any> {
    const res = await this.request(method, path, body, headers);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** The HTTP status a GET of `path` answers (404 once an object is gone). */
  async status(path: string): Promise<number> {
    return (await this.request('GET', path)).status;
  }

  /** A namespace of the test's own. */
  async freshNamespace(prefix: string): Promise<string> {
    const ns = await this.ok('POST', '/api/v1/namespaces', { metadata: { generateName: `${prefix}-` } });
    return ns.metadata.name;
  }
}

/** The collection path of the seed CRD `At` (cnat) in `ns`. */
export const ats = (ns: string) => `/apis/cnat.study.jayground8/v1alpha1/namespaces/${ns}/ats`;

/** An `At` object named `name`, running `command`. */
export const at = (name: string, command = 'echo hi') => ({
  apiVersion: 'cnat.study.jayground8/v1alpha1',
  kind: 'At',
  metadata: { name },
  spec: { schedule: '2030-01-01T00:00:00Z', command },
});

/** Millicores in a CPU quantity ("2", "1500m", "0.5"). */
function millicores(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) : Math.round(Number(quantity) * 1000);
}

/**
 * Leaves every node `cpus` CPUs to place Pods with, whatever the machine has (a real
 * node offers all of the machine's): a Pod in `ns` pinned to each larger node requests
 * the rest. Resolves once they are placed; call what it returns to remove them.
 */
export async function holdNodesTo(kube: Kube, ns: string, cpus: number): Promise<() => Promise<void>> {
  const pods = `/api/v1/namespaces/${ns}/pods`;
  const held: string[] = [];
  for (const node of (await kube.ok('GET', '/api/v1/nodes')).items) {
    const rest = millicores(node.status.allocatable.cpu) - cpus * 1000;
    if (rest <= 0) continue;
    const name = `cpu-hold-${held.length}`;
    const pod = {
      metadata: { name },
      spec: {
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 0,
        tolerations: [{ operator: 'Exists' }],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node.metadata.name] }] }],
            },
          },
        },
        containers: [
          { name: 'hold', image: 'portico.local/pause:3.10', imagePullPolicy: 'Never', resources: { requests: { cpu: `${rest}m` } } },
        ],
      },
    };
    // A fresh namespace's default ServiceAccount, which admission wants, comes shortly.
    await expect.poll(async () => (await kube.request('POST', pods, pod)).status, { timeout: 20_000 }).toBe(201);
    held.push(name);
  }
  // Placed (whether or not its container runs): the scheduler counts its request.
  for (const name of held) {
    await expect
      .poll(async () => (await kube.ok('GET', `${pods}/${name}`)).spec.nodeName ?? '', {
        message: `${name} placed (the node's other Pods must leave it ${cpus} CPUs)`,
        timeout: 60_000,
      })
      .not.toBe('');
  }
  return async () => {
    for (const name of held) await kube.request('DELETE', `${pods}/${name}`);
    for (const name of held) await expect.poll(() => kube.status(`${pods}/${name}`), { timeout: 60_000 }).toBe(404);
  };
}
