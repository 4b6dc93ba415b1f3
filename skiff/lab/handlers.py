"""The REST API of the Jobs sidebar, under ``<base_url>/skiff/api/``.

=======  =================================  ====================================================
GET      ``jobs[?kind=K&status=S]``           every job (of that kind, in that status), newest
                                            first: ``{"root", "jobs": [row]}``
GET      ``jobs/ID``                        one job's live view (:func:`payload.job_detail`)
GET      ``jobs/ID/events?offset=B``        the events after byte ``B`` of its events.jsonl
GET      ``jobs/ID/images/NAME``            an image its detail lists (png, jpeg, gif, webp)
POST     ``jobs/ID/cancel``                 ask it to stop (``Job.cancel``: the cancel file,
                                            then the escalation with its identity checks)
DELETE   ``jobs/ID``                        remove a finished job's run folder (``jobs rm``);
                                            409 while it runs
=======  =================================  ====================================================

Every handler is a jupyter_server ``APIHandler`` behind ``@tornado.web.authenticated`` and
``@authorized`` (the server's token, XSRF and authorizer rules apply), answers JSON only, and
does its file work on a worker thread so the server never waits on a disk. Nothing is run
from a folder: the API reads, writes the cancel file, signals a process only through
``Job.cancel`` (which checks the signed process record first) and removes folders only
through :func:`skiff.jobs.remove_jobs`.
"""

from __future__ import annotations

import asyncio
import json
import time

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from skiff.jobs import DamagedJob, remove_jobs, select_jobs
from skiff.jobs.events import STATUSES
from skiff.jobs.signals import NotJobProcess
from skiff.jobs.store import json_safe

from .payload import _JOB_ID, JobCache, UnknownJob, events_since, image_file, job_detail, job_row

__all__ = ["handlers", "AUTH_RESOURCE"]

AUTH_RESOURCE = "skiff"  # what a custom authorizer sees (read: GET, write: POST/DELETE)
_ID = r"(?P<job_id>[^/]+)"


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE

    def initialize(self, cache: JobCache) -> None:
        self.cache = cache

    async def work(self, fn, *args):
        """``fn(*args)`` on a worker thread; a missing job is 404, a refused step 409."""
        try:
            return await asyncio.get_running_loop().run_in_executor(None, fn, *args)
        except UnknownJob as exc:
            raise web.HTTPError(404, str(exc)) from None
        except (NotJobProcess, ValueError) as exc:
            raise web.HTTPError(409, str(exc)) from None

    def reply(self, data) -> None:
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        # strict JSON: a NaN a folder smuggled in (config.json, info) is sent as text
        self.finish(json.dumps(json_safe(data), allow_nan=False))


class JobsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self):
        limit = self.get_query_argument("limit", "200")
        if not limit.isdigit() or int(limit) < 1:
            raise web.HTTPError(400, f"limit must be a positive integer, got {limit!r}")
        kind = self.get_query_argument("kind", "") or None
        status = self.get_query_argument("status", "") or None
        if status is not None and status not in (*STATUSES, "damaged"):
            raise web.HTTPError(400, f"status must be one of {', '.join(STATUSES)} or damaged, "
                                     f"got {status!r}")
        if kind is not None and not _JOB_ID.match(kind):
            raise web.HTTPError(400, f"kind must be a job kind's name, got {kind!r}")
        self.reply(await self.work(self._list, int(limit), kind, status))

    def _list(self, limit: int, kind: str | None = None, status: str | None = None) -> dict:
        now = time.time()
        everything = self.cache.jobs()
        jobs = select_jobs(everything, limit=limit, kind=kind, status=status)
        # the kinds there are, for the sidebar's filter (a filter that lists none is kept)
        kinds = sorted({j.kind for j in everything if not isinstance(j, DamagedJob)})
        return {"root": str(self.cache.root), "now": now, "hidden": jobs.hidden,
                "total": len(everything), "kinds": kinds,
                "jobs": [job_row(j, now) for j in jobs]}


class JobHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, job_id: str):
        self.reply(await self.work(lambda: job_detail(self.cache.find(job_id))))

    @web.authenticated
    @authorized
    async def delete(self, job_id: str):
        self.reply(await self.work(self._remove, job_id))

    def _remove(self, job_id: str) -> dict:
        self.cache.find(job_id)  # an exact folder name: never a prefix or a job's name
        removed = remove_jobs([job_id], root=self.cache.root)  # refuses a running job
        self.cache.forget(job_id)
        return {"removed": removed}


class CancelHandler(_Base):
    @web.authenticated
    @authorized
    async def post(self, job_id: str):
        self.reply(await self.work(self._cancel, job_id))

    def _cancel(self, job_id: str) -> dict:
        job = self.cache.find(job_id)
        if isinstance(job, DamagedJob):
            raise ValueError(f"job {job_id} is damaged ({job.reason}): nothing to cancel")
        if job.refresh().final:
            raise ValueError(f"job {job_id} has already ended ({job.status})")
        job.cancel()
        return {"job": job_row(job)}


class EventsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, job_id: str):
        offset = self.get_query_argument("offset", "0")
        if not offset.isdigit():
            raise web.HTTPError(400, f"offset must be a byte offset (>= 0), got {offset!r}")
        self.reply(await self.work(
            lambda: events_since(self.cache.find(job_id).run_dir, int(offset))))


class ImageHandler(JupyterHandler):
    """An image's bytes (an APIHandler answers JSON only: its finish sets that type); the
    same token, authorizer and worker thread as the JSON handlers."""

    auth_resource = AUTH_RESOURCE
    initialize = _Base.initialize
    work = _Base.work

    @web.authenticated
    @authorized
    async def get(self, job_id: str, name: str):
        path, kind = await self.work(lambda: image_file(self.cache.find(job_id), name))
        data = await self.work(path.read_bytes)
        self.set_header("Content-Type", kind)
        self.set_header("Cache-Control", "no-store")  # loss.png is drawn again as it trains
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(data)


def handlers(base_url: str, cache: JobCache) -> list[tuple]:
    """The routes, under ``base_url``, sharing one :class:`JobCache`."""
    api = url_path_join(base_url, "skiff", "api", "jobs")
    args = {"cache": cache}
    return [(api, JobsHandler, args),
            (url_path_join(api, _ID), JobHandler, args),
            (url_path_join(api, _ID, "cancel"), CancelHandler, args),
            (url_path_join(api, _ID, "events"), EventsHandler, args),
            (url_path_join(api, _ID, "images", r"(?P<name>[^/]+)"), ImageHandler, args)]
