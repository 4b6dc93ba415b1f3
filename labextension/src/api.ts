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
  ranks?: IRankRow[]; // a job on MPI ranks: one row each
}

export interface IJobList {
  root: string;
  now: number;
  hidden: number;
  total?: number; // every job under the root, whatever the filter
  kinds?: string[]; // the kinds there are (the filter's menu)
  jobs: IJobRow[];
}

/** One MPI rank of a job (skiff/lab/payload.py: rank_rows). */
export interface IRankRow {
  rank: number;
  status: string; // starting, running, exited, failed, left, died
  pid: number | null;
  host: string | null;
  code: number | null;
  detail: string | null;
  line: string | null;
  done: number | null; // its part, where the ranks share the work
  total: number | null;
  fraction: number | null;
}

/** What the sidebar lists: a kind and a status, or every job. */
export interface IJobFilter {
  kind?: string;
  status?: string;
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
  ranks?: IRankRow[];
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

export function listJobs(filter: IJobFilter = {}): Promise<IJobList> {
  const query = Object.entries(filter)
    .filter(([, v]) => v)
    .map(([k, v]) => `${k}=${encodeURIComponent(v as string)}`)
    .join('&');
  return request<IJobList>(query ? `jobs?${query}` : 'jobs');
}

/** An image of a job's run folder (one its detail lists), as a Blob: fetched with the
 * server's token, so an <img> shows it through an object URL. */
export async function getImage(id: string, name: string): Promise<Blob> {
  const url = URLExt.join(settings.baseUrl, 'skiff', 'api', 'jobs', encodeURIComponent(id),
    'images', encodeURIComponent(name));
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch (error) {
    throw new ApiError(`the server cannot be reached (${error})`, 0);
  }
  if (!response.ok) {
    throw new ApiError(response.statusText, response.status);
  }
  return response.blob();
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
