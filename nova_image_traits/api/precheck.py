# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""A nova-api pre-check: refuse a rebuild before anything changes.

Nova's API accepts a rebuild, writes the new image into the server, its
system metadata and its request spec, and only then casts to the
conductor, whose refusal puts the server in ERROR. This paste filter runs
the same decision in nova-api first, so that a rebuild the configured
strategy refuses fails at once and leaves the server untouched::

    [composite:openstack_compute_api_v21]
    keystone = ... keystonecontext image_traits_precheck osapi_compute_app_v21

    [filter:image_traits_precheck]
    paste.filter_factory = \
        nova_image_traits.api.precheck:RebuildPrecheck.factory

(on one line; and the same in
``openstack_compute_api_v21_legacy_v2_compatible``). It goes after
``keystonecontext``, which puts the request context in the environ. The
conductor hook stays the authoritative check: traits can change between
the API and the conductor.

Only ``POST /servers/{id}/action`` with a ``rebuild`` is looked at;
everything else passes through untouched. Before deciding anything, the
pre-check runs nova's own rebuild code on the request (:class:`_NovaProbe`):
the servers controller's rebuild action, with its request schema for the
request's microversion and its policy checks, and
``nova.compute.api.API.rebuild`` with its decorators (lock, state, vTPM,
accelerators, shares) and every check it makes before its first write
(the image exists, is active and fits the flavor, the NUMA topology does
not change, metadata quotas, ...). That first write is where the probe
stops. A request nova refuses, for whatever reason, passes through, so
that nova answers it as it always does; so does one the pre-check cannot
decide on (the same image, a volume-backed server, a server never
launched, a failure of the pre-check itself).

A refusal answers with nova's error document and the compute API's
version headers (``OpenStack-API-Version``, ``Vary``): ``409
conflictingRequest`` only when a retry may change the answer (placement
was unreachable, timed out or answered with a server error), ``400
badRequest`` otherwise (the image's traits are missing, forbidden by the
flavor or malformed; the strategy and its fallback could not decide;
placement or its configuration is wrong), each with a reason that says
what the user can do.
"""

import dataclasses
import json
import re

from oslo_log import log as logging
import webob.dec
import webob.exc

from nova.api.openstack.compute import servers as servers_controller
from nova.api.openstack import wsgi as openstack_wsgi
from nova.api import wsgi as nova_wsgi
import nova.conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects

from nova_image_traits.api import policy
from nova_image_traits import decision as nit_decision
from nova_image_traits import engine
from nova_image_traits import nova_request

LOG = logging.getLogger(__name__)

#: The path of a server action, with or without a version and project.
_ACTION = re.compile(r'^/(?:v2(?:\.1)?/)?(?:[^/]+/)?servers/([^/]+)/action$')


class _NovaAccepts(Exception):
    """``API.rebuild`` reached its first write: nova's checks all passed."""


class _NovaProbe:
    """nova's compute API, whose ``rebuild`` stops at its first write.

    Everything else is nova's own :class:`nova.compute.api.API`.
    """

    def __init__(self, compute_api):
        self._compute_api = compute_api
        self.seen = None

    def __getattr__(self, name):
        return getattr(self._compute_api, name)

    def rebuild(self, context, instance, image_href, admin_password,
                **kwargs):
        # What the server is now: nova's rebuild changes the object.
        self.seen = {
            'instance_uuid': instance.uuid,
            'image_href': image_href,
            'orig_image_ref': instance.image_ref,
            'orig_sys_metadata': dict(instance.system_metadata),
            'host': instance.host,
            'node': instance.node,
            'flavor': instance.flavor,
        }

        def first_write(*args, **kwargs):
            raise _NovaAccepts()

        # NOTE(nova-image-traits): instance.save(expected_task_state=[None])
        # is API.rebuild's first write; everything before it only reads.
        instance.save = first_write
        self._compute_api.rebuild(context, instance, image_href,
                                  admin_password, **kwargs)
        raise RuntimeError('nova.compute.api.API.rebuild returned without '
                           'saving the instance')


def _without_error_translation(func):
    """The controller method under ``wsgi.expected_errors``.

    That decorator turns any other exception into a logged 500; the
    schema validation and the method below it are what the probe runs.
    """
    marker = openstack_wsgi.expected_errors(400)(lambda: None).__code__
    while getattr(func, '__code__', None) is not marker:
        func = func.__wrapped__
    return func.__wrapped__


def _rebuild_action():
    """The servers controller's rebuild action, by nova's action marker.

    Its name differs between series: ``_action_rebuild`` in nova 31 and 32
    (2025.1, 2025.2), ``_rebuild`` from nova 33 (2026.1) on;
    ``wsgi.action('rebuild')`` marks it in every one.
    """
    for func in vars(servers_controller.ServersController).values():
        if getattr(func, 'wsgi_action', None) == 'rebuild':
            return func
    raise AttributeError('ServersController has no rebuild action')


class RebuildPrecheck(nova_wsgi.Middleware):
    """Refuse, in nova-api, a rebuild the configured strategy refuses."""

    def __init__(self, application):
        super().__init__(application)
        self._controller = None
        try:
            self._rebuild = _without_error_translation(_rebuild_action())
        except AttributeError:
            LOG.error('The image traits pre-check cannot find nova\'s rebuild '
                      'action under its expected_errors decorator in this '
                      'nova; it lets every rebuild through to nova, and the '
                      'conductor hook decides.')
            self._rebuild = None

    @webob.dec.wsgify
    def __call__(self, req):
        match = _ACTION.match(req.path_info)
        if req.method != 'POST' or not match or self._rebuild is None:
            return self.application
        server_id = match.group(1)
        try:
            body = json.loads(req.body or b'{}')
        except ValueError:
            return self.application  # nova answers
        if not isinstance(body, dict) or 'rebuild' not in body:
            return self.application
        nova_req = openstack_wsgi.Request(req.environ)
        try:
            decision = self._decide(nova_req, server_id, body)
        except Exception:
            # NOTE(founders): the conductor hook still decides; never break the
            # API.
            LOG.exception('The image traits pre-check failed for the '
                          'rebuild of server %s; letting nova handle it.',
                          server_id)
            return self.application
        if decision is None or decision.allowed:
            return self.application
        return _refusal(nova_req, decision)

    def _nova_accepts(self, req, server_id, body):
        """Run nova's own rebuild on the request, up to its first write.

        :returns: what the server is now (see :class:`_NovaProbe`), or
            None when nova refuses the request
        """
        if self._controller is None:
            self._controller = servers_controller.ServersController()
        controller = self._controller
        probe = _NovaProbe(controller.compute_api)
        # NOTE(nova-image-traits): a shallow copy per request, so that
        # concurrent requests each have their own probe.
        view = object.__new__(type(controller))
        view.__dict__.update(controller.__dict__)
        view.compute_api = probe
        try:
            req.set_api_version_request()
            self._rebuild(view, req, server_id, body=body)
        except _NovaAccepts:
            return probe.seen
        except Exception as e:
            LOG.debug('Rebuild of server %(server)s left to nova, which '
                      'refuses it: %(type)s: %(error)s',
                      {'server': server_id, 'type': type(e).__name__,
                       'error': e})
            return None
        return None

    def _decide(self, req, server_id, body):
        context = req.environ.get('nova.context')
        if context is None:
            LOG.warning('No nova.context in the request: put '
                        'image_traits_precheck after keystonecontext in '
                        'api-paste.ini.')
            return None
        seen = self._nova_accepts(req, server_id, body)
        if seen is None:
            return None
        if seen['image_href'] == seen['orig_image_ref']:
            return None  # nova checks nothing for the same image
        if not seen['orig_image_ref'] or not seen['host']:
            # Volume-backed (the conductor decides and restores), or never
            # launched: nova answers.
            return None
        image = self._controller.compute_api.image_api.get(
            context, seen['image_href'])
        image_meta = objects.ImageMeta.from_dict(image)
        if not (nova_request.image_properties_from_image_meta(image_meta) or
                nova_request.judges_derived(nova.conf.CONF) or
                nova.conf.CONF.scheduler.enable_isolated_aggregate_filtering):
            return None
        admin = context.elevated()
        try:
            spec = objects.RequestSpec.get_by_instance_uuid(
                admin, seen['instance_uuid'])
        except nova_exception.RequestSpecNotFound:
            return None  # the conductor hook decides
        spec.image = image_meta
        request = nova_request.rebuild_request(
            context, spec, image_meta, None, seen['host'],
            flavor=seen['flavor'],
            orig_sys_metadata=seen['orig_sys_metadata'],
            orig_image_ref=seen['orig_image_ref'], conf=nova.conf.CONF)
        if not request.judged():
            return None
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            admin, seen['instance_uuid'])
        with nova_context.target_cell(admin, mapping.cell_mapping) as cctxt:
            node = objects.ComputeNode.get_by_host_and_nodename(
                cctxt, seen['host'], seen['node'])
        request = dataclasses.replace(request, compute_node_uuid=node.uuid)
        return engine.decide(request, conf=nova.conf.CONF)


def _refusal(req, decision):
    """nova's error document, with the compute API's version headers.

    409 only when a retry may change the answer; 400 otherwise.
    """
    if (decision.outcome == nit_decision.ERROR and
            getattr(decision, 'transient', False)):
        error = webob.exc.HTTPConflict
    else:
        error = webob.exc.HTTPBadRequest
    # NOTE(nova-image-traits): the 400 is read by its caller alone: it
    # names the host's detail only for a caller nova's policy allows.
    fault = openstack_wsgi.Fault(error(explanation=policy.refusal_reason(
        req.environ['nova.context'], decision)))
    # Called with nova's request, whose api_version_request is set, the
    # fault adds OpenStack-API-Version and Vary as nova's own errors do.
    return fault(req)
