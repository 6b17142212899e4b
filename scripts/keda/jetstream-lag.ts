/**
 * The metric KEDA's nats-jetstream scaler reads, read the way it reads it: the same HTTP request to
 * the nats-server monitoring port, the same JSON fields, the same consumer-leader search on a
 * cluster. Source: kedacore/keda @ 8b4f083ca8c8, pkg/scalers/nats_jetstream_scaler.go (line
 * numbers below).
 */

/** The trigger metadata that names the consumer (account or accountID, stream, consumer). */
export interface JetStreamTarget {
  /** Account name; nats-server's global account, when no accounts are configured, is `$G`. */
  readonly account: string;
  /** Account ID (nkey); KEDA uses the name when it is not given (:149-151). */
  readonly accountId?: string;
  readonly stream: string;
  readonly consumer: string;
}

export interface JetStreamLag {
  /** num_pending + num_ack_pending: what KEDA hands to the HPA (:422-431). */
  readonly lag: number;
  /** Messages not yet delivered to any client. */
  readonly numPending: number;
  /** Delivered and not yet acked: jobs in workers' hands. */
  readonly numAckPending: number;
  /** The monitoring URL the figure came from (the consumer leader's, on a cluster). */
  readonly url: string;
}

// The subset of /jsz and /varz that KEDA decodes (:53-117).
interface JszResponse {
  account_details?: JszAccount[];
  meta_cluster?: { cluster_size?: number };
}
interface JszAccount {
  id?: string;
  name?: string;
  stream_detail?: JszStream[];
}
interface JszStream {
  name: string;
  consumer_detail?: JszConsumer[];
}
interface JszConsumer {
  name: string;
  num_pending?: number;
  num_ack_pending?: number;
  cluster?: { leader?: string };
}
interface VarzResponse {
  server_name?: string;
  connect_urls?: string[];
  cluster?: { urls?: string[] };
}

/** KEDA_HTTP_DEFAULT_TIMEOUT's default (kedacore/keda cmd/operator/main.go:235). */
const KEDA_HTTP_TIMEOUT_MS = 3000;

/**
 * /jsz?acc=<id>&config=true&consumers=true on the endpoint (:343-362). Go's url.Values.Encode sorts
 * the keys, so that is the order; URLSearchParams escapes `$` as %24 as Go's QueryEscape does.
 */
export function kedaJszUrl(monitorUrl: string, accountId: string): string {
  const base = new URL(monitorUrl);
  const query = new URLSearchParams([
    ['acc', accountId],
    ['config', 'true'],
    ['consumers', 'true'],
  ]);
  return `${base.protocol}//${base.host}/jsz?${query.toString()}`;
}

/**
 * One scaler's worth of state: like KEDA's, it remembers the consumer leader's monitoring URL
 * between polls, and looks for the leader again when the consumer is not found there or the
 * leader changed (:158-266).
 */
export class JetStreamLagReader {
  private readonly jszUrl: string;
  private consumerLeader = '';
  private leaderUrl = '';
  /** KEDA starts from an empty stream detail, so an unknown stream first reads as an unknown consumer. */
  private stream: JszStream | undefined = { name: '', consumer_detail: [] };
  private clusterSize = 0;

  constructor(
    private readonly monitorUrl: string,
    private readonly target: JetStreamTarget,
    private readonly options: { timeoutMs?: number } = {},
  ) {
    this.jszUrl = kedaJszUrl(monitorUrl, target.accountId ?? target.account);
  }

  /** GetMetricsAndActivity's figure (:448-467); throws where KEDA reports a scaler error. */
  async read(): Promise<JetStreamLag> {
    const url = await this.refresh();
    if (!this.stream) throw new Error('stream not found');
    const consumer = this.stream.consumer_detail?.find((c) => c.name === this.target.consumer);
    if (!consumer) throw new Error(`consumer "${this.target.consumer}" not found in stream "${this.target.stream}"`);
    const numPending = consumer.num_pending ?? 0;
    const numAckPending = consumer.num_ack_pending ?? 0;
    return { lag: numPending + numAckPending, numPending, numAckPending, url };
  }

  /** getNATSJetstreamMonitoringData (:158-266); returns the URL the data came from. */
  private async refresh(): Promise<string> {
    const cachedLeader = this.consumerLeader;
    const url = this.leaderUrl || this.jszUrl;
    const found = this.remember(await this.getJson<JszResponse>(url), '');
    if (cachedLeader && !found) this.forget();
    if (found && cachedLeader && cachedLeader === this.consumerLeader) return url;
    if (this.clusterSize <= 1) return url;
    return this.findLeader();
  }

  /** The cluster branch (:185-263): ask each node for its name and its /jsz until one leads the consumer. */
  private async findLeader(): Promise<string> {
    const self = new URL(this.jszUrl);
    const varz = await this.getJson<VarzResponse>(`${self.protocol}//${self.host}/varz`);
    const advertised = (varz.connect_urls ?? []).length > 0;
    const nodes = advertised ? varz.connect_urls! : (varz.cluster?.urls ?? []);
    for (const clusterUrl of nodes) {
      let node: string;
      let nodeJszUrl: string;
      if (advertised) {
        // nats-1.nats.svc:4222 -> nats-1.nats.svc, on the monitoring port (:210-231).
        const hostname = clusterUrl.split(':')[0]!;
        const host = self.port ? `${hostname}:${self.port}` : hostname;
        node = (await this.getJson<VarzResponse>(`${self.protocol}//${host}/varz`)).server_name ?? '';
        nodeJszUrl = `${self.protocol}//${host}${self.pathname}${self.search}`;
      } else {
        // Routes only: the node's name is the first DNS label, prefixed to the endpoint's host (:232-237, :405-420).
        node = clusterUrl.split('.')[0]!;
        nodeJszUrl = `${self.protocol}//${node}.${self.host}${self.pathname}${self.search}`;
      }
      const response = await this.getJson<JszResponse>(nodeJszUrl);
      const consumer = this.findConsumer(response);
      if (consumer && node === consumer.cluster?.leader) {
        this.remember(response, nodeJszUrl);
        return nodeJszUrl;
      }
    }
    throw new Error(`leader node not found for consumer ${this.target.consumer}`);
  }

  /** setNATSJetStreamMonitoringData (:268-292): keeps the stream, and the leader when the consumer is there. */
  private remember(response: JszResponse, leaderUrl: string): boolean {
    this.clusterSize = response.meta_cluster?.cluster_size ?? 0;
    for (const account of response.account_details ?? []) {
      if (!this.isAccount(account)) continue;
      for (const stream of account.stream_detail ?? []) {
        if (stream.name !== this.target.stream) continue;
        this.stream = stream;
        const consumer = stream.consumer_detail?.find((c) => c.name === this.target.consumer);
        if (consumer) {
          this.consumerLeader = consumer.cluster?.leader ?? '';
          if (leaderUrl) this.leaderUrl = leaderUrl;
          return true;
        }
      }
    }
    return false;
  }

  private findConsumer(response: JszResponse): JszConsumer | undefined {
    for (const account of response.account_details ?? []) {
      if (!this.isAccount(account)) continue;
      const stream = account.stream_detail?.find((s) => s.name === this.target.stream);
      const consumer = stream?.consumer_detail?.find((c) => c.name === this.target.consumer);
      if (consumer) return consumer;
    }
    return undefined;
  }

  /** invalidateNATSJetStreamCachedMonitoringData (:294-298). */
  private forget(): void {
    this.consumerLeader = '';
    this.leaderUrl = '';
    this.stream = undefined;
  }

  /** IsAccount (:476-478): the ID or the name matches. */
  private isAccount(account: JszAccount): boolean {
    return account.id === (this.target.accountId ?? this.target.account) || account.name === this.target.account;
  }

  private async getJson<T>(url: string): Promise<T> {
    const response = await fetch(url, { signal: AbortSignal.timeout(this.options.timeoutMs ?? KEDA_HTTP_TIMEOUT_MS) });
    // KEDA decodes whatever comes back without checking the status; a non-JSON error page fails the decode.
    return (await response.json()) as T;
  }
}

/** One poll with a fresh scaler: the lag KEDA would report for this consumer right now. */
export async function queryJetStreamLag(monitorUrl: string, target: JetStreamTarget, options: { timeoutMs?: number } = {}): Promise<JetStreamLag> {
  return new JetStreamLagReader(monitorUrl, target, options).read();
}
