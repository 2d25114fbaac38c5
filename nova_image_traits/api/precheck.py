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

Only ``POST /servers/{id}/action`` with a ``rebuild`` to an image other
than the server's current one is looked at; everything else passes
through untouched. So does a rebuild nova would refuse for its own
reasons (the caller may not rebuild, the server is locked, busy or in a
state that cannot be rebuilt, the image reference is not a UUID), and
anything the pre-check cannot read (a missing server or image, a
volume-backed server), so that nova answers it as it always does. A
refusal answers with nova's error document: ``400 badRequest`` when the
image is not valid for this server (its traits are missing, forbidden by
the flavor, malformed or too many),
``409 conflictingRequest`` when it cannot be decided now (placement
failed, or the strategy was inconclusive), so the user may retry.
"""

import dataclasses
import json
import re

from oslo_log import log as logging
from oslo_utils import uuidutils
import webob.dec
import webob.exc

from nova.api.openstack import wsgi as openstack_wsgi
from nova.api import wsgi as nova_wsgi
from nova.compute import api as compute_api
from nova.compute import vm_states
import nova.conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.policies import servers as server_policies

from nova_image_traits import decision as nit_decision
from nova_image_traits import engine
from nova_image_traits import nova_request

LOG = logging.getLogger(__name__)

#: The path of a server action, with or without a version and project.
_ACTION = re.compile(r'^/(?:v2(?:\.1)?/)?(?:[^/]+/)?servers/([^/]+)/action$')
#: The states nova's API rebuilds from (``check_instance_state``).
_REBUILDABLE = frozenset([vm_states.ACTIVE, vm_states.STOPPED,
                          vm_states.ERROR])


class RebuildPrecheck(nova_wsgi.Middleware):
    """Refuse, in nova-api, a rebuild the configured strategy refuses."""

    def __init__(self, application):
        super().__init__(application)
        self._compute_api = None

    @webob.dec.wsgify
    def __call__(self, req):
        match = _ACTION.match(req.path_info)
        if req.method != 'POST' or not match:
            return self.application
        server_id = match.group(1)
        try:
            decision = self._decide(req, server_id)
        except Exception:
            # NOTE(founders): the conductor hook still decides; never break the
            # API.
            LOG.exception('The image traits pre-check failed for the '
                          'rebuild of server %s; letting nova handle it.',
                          server_id)
            return self.application
        if decision is None or decision.allowed:
            return self.application
        # A rejection says the image is wrong for this server; any other
        # outcome says the question cannot be answered now.
        if decision.outcome == nit_decision.REJECT:
            error = webob.exc.HTTPBadRequest
        else:
            error = webob.exc.HTTPConflict
        return openstack_wsgi.Fault(error(explanation=decision.user_reason()))

    @staticmethod
    def _nova_would_rebuild(context, instance):
        """Whether nova's own checks would let this rebuild through.

        The same policy rule, and the state and lock checks of
        ``nova.compute.api.API.rebuild``; the pre-check decides nothing
        for a request nova refuses anyway, and tells a caller who may not
        rebuild nothing about the host.
        """
        try:
            context.can(server_policies.SERVERS % 'rebuild',
                        target={'user_id': instance.user_id,
                                'project_id': instance.project_id})
        except nova_exception.Forbidden:
            return False
        if instance.locked and not context.is_admin:
            return False
        return (instance.vm_state in _REBUILDABLE and
                instance.task_state is None and
                bool(instance.image_ref) and bool(instance.host))

    def _decide(self, req, server_id):
        context = req.environ.get('nova.context')
        if context is None:
            LOG.warning('No nova.context in the request: put '
                        'image_traits_precheck after keystonecontext in '
                        'api-paste.ini.')
            return None
        # webob reads the body into a seekable buffer and rewinds it, so
        # nova reads it again after us.
        try:
            image_href = json.loads(req.body or b'{}')['rebuild']['imageRef']
        except (ValueError, TypeError, KeyError):
            return None
        if not uuidutils.is_uuid_like(image_href):
            return None  # nova's schema refuses it
        if self._compute_api is None:
            self._compute_api = compute_api.API()
        try:
            instance = self._compute_api.get(
                context, server_id,
                expected_attrs=['flavor', 'system_metadata'])
        except Exception:
            return None  # nova answers 404 or its own error
        if not self._nova_would_rebuild(context, instance):
            return None
        if image_href == instance.image_ref:
            return None  # nova checks nothing for the same image
        try:
            image = self._compute_api.image_api.get(context, image_href)
        except Exception:
            return None  # nova reports the bad image itself
        image_meta = objects.ImageMeta.from_dict(image)
        if not (nova_request.image_properties_from_image_meta(image_meta) or
                nova_request.judges_derived(nova.conf.CONF)):
            return None
        admin = context.elevated()
        try:
            spec = objects.RequestSpec.get_by_instance_uuid(admin,
                                                            instance.uuid)
        except nova_exception.RequestSpecNotFound:
            return None  # the conductor hook decides
        spec.image = image_meta
        request = nova_request.rebuild_request(
            context, spec, image_meta, None, instance.host,
            flavor=instance.flavor,
            orig_sys_metadata=instance.system_metadata,
            orig_image_ref=instance.image_ref, conf=nova.conf.CONF)
        if not request.asks():
            return None
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            admin, instance.uuid)
        with nova_context.target_cell(admin, mapping.cell_mapping) as cctxt:
            node = objects.ComputeNode.get_by_host_and_nodename(
                cctxt, instance.host, instance.node)
        return engine.decide(dataclasses.replace(
            request, compute_node_uuid=node.uuid), conf=nova.conf.CONF)
