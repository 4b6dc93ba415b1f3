// The REST API of skiff.lab (skiff/lab/handlers.py), typed. Every request goes through
// ServerConnection.makeRequest, so the server's token and XSRF rules apply.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** One job of the list (skiff/lab/payload.py: job_row). */
export interface IJobRow {
  id: string;
  name: string | null;
  kind: string;
  status: string; // queued, running, done, failed, cancelled, damaged
  final: boolean;
  fraction: number | null;
  progress: string;
  created: number | null;
  started: number | null;
  ended: number | null;
  elapsed: number | null;
  command: string | null;
  np: number | null;
  runner: string | null;
  device: string | null;
  error: string | null;
  inferred?: string | null;
  damaged: string | null;
  trust: string | null;
}

export interface IJobList {
  root: string;
  now: number;
  hidden: number;
  jobs: IJobRow[];
}

export interface IMetric {
  last: number | string;
  count: number;
  points: [number, number | string][];
}

/** One job's live view (skiff/lab/payload.py: job_detail). */
export interface IJobDetail {
  job: IJobRow;
  unit?: string;
  message?: string | null;
  metrics: { [name: string]: IMetric };
  log: { t: number | null; level: string; message: string }[];
  error?: string | null;
  traceback: string | null;
  result: { [key: string]: unknown } | null; // result.json, when small
  summary: string | null; // what the terminal prints when the job ends
  run_dir: string;
  images: string[];
  info: { [key: string]: unknown };
}

/** A request to the API refused or failed, with the server's one-line message. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number
  ) {
    super(message);
  }
}

const settings = ServerConnection.makeSettings();

async function request<T>(path: string, init: RequestInit = {}): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'skiff', 'api', path);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`the server cannot be reached (${error})`, 0);
  }
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const why = (data && data.message) || response.statusText;
    throw new ApiError(String(why), response.status);
  }
  return data as T;
}

export function listJobs(): Promise<IJobList> {
  return request<IJobList>('jobs');
}

export function getJob(id: string): Promise<IJobDetail> {
  return request<IJobDetail>(URLExt.join('jobs', encodeURIComponent(id)));
}

export function cancelJob(id: string): Promise<{ job: IJobRow }> {
  return request(URLExt.join('jobs', encodeURIComponent(id), 'cancel'), {
    method: 'POST'
  });
}

export function removeJob(id: string): Promise<{ removed: string[] }> {
  return request(URLExt.join('jobs', encodeURIComponent(id)), {
    method: 'DELETE'
  });
}
