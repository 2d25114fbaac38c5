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
conductor, whose refusal puts the server in ERROR. The pre-check decides in
nova-api first, inside nova's own rebuild call, so that a rebuild the
configured strategy refuses fails at once and leaves the server untouched.
This paste filter is its switch::

    [composite:openstack_compute_api_v21]
    keystone = ... keystonecontext image_traits_precheck osapi_compute_app_v21

    [filter:image_traits_precheck]
    paste.filter_factory = \\
        nova_image_traits.api.precheck:RebuildPrecheck.factory

(on one line; and the same in
``openstack_compute_api_v21_legacy_v2_compatible``). It goes after
``keystonecontext``, which puts the request context in the environ. The
conductor hook stays the authoritative check: traits can change between
the API and the conductor.

The filter itself only marks the request context of a server action; its
factory installs, once per nova-api worker, the wrapper of
``nova.compute.api.API.rebuild`` that decides for marked requests, at
nova's first write, after every check of nova's
(:mod:`.rebuild_wrapper`). A rebuild nova refuses gets nova's answer; the
same image, and a server never launched, are not decided.

A refusal is nova's own error document with nova's headers: ``409
conflictingRequest`` only when a retry may change the answer (placement
was unreachable, timed out or answered with a server error), ``400
badRequest`` otherwise (the image's traits are missing, forbidden by the
flavor or malformed; the strategy and its fallback could not decide),
each with a reason that says what the user can do. The reason names the
host's detail (the traits it lacks) only to a caller nova's policy rule
``os_compute_api:image_traits:refusal:host_detail`` allows (admins by
default; :mod:`.policy`); a tenant reads that the host does not offer what
the new image requires. When the pre-check
itself fails (a bug, a misconfiguration of nova-image-traits or of
placement) nova goes on and the conductor hook decides; the log says why.

When the running nova lacks an internal the wrapper relies on
(:mod:`.compat`), ``[image_traits] precheck_on_unsupported_nova`` says
whether nova-api runs without the pre-check or refuses to start.
"""

import re

from oslo_log import log as logging
import webob.dec
import webob.exc

from nova.api import wsgi as nova_wsgi
import nova.conf

from nova_image_traits.api import compat
from nova_image_traits.api import policy
from nova_image_traits.api import rebuild_wrapper
from nova_image_traits import conf as nit_conf
from nova_image_traits import decision as nit_decision

LOG = logging.getLogger(__name__)

#: The path of a server action, with or without a version and project.
_ACTION = re.compile(r'^/(?:v2(?:\.1)?/)?(?:[^/]+/)?servers/([^/]+)/action$')


def install():
    """Install the wrapper, or follow ``precheck_on_unsupported_nova``.

    :returns: whether the pre-check is active in this process
    :raises compat.PrecheckInstallError: when this nova is not supported
        and the option says ``refuse_to_start``
    """
    conf = nova.conf.CONF
    if 'image_traits' not in conf:
        nit_conf.register_opts(conf)
    try:
        rebuild_wrapper.install(_refusal)
    except compat.PrecheckInstallError as e:
        if conf.image_traits.precheck_on_unsupported_nova == \
                'refuse_to_start':
            LOG.critical('%s nova-api does not start ([image_traits] '
                         'precheck_on_unsupported_nova = refuse_to_start).',
                         e)
            raise
        LOG.critical('%s nova-api runs without the pre-check: the conductor '
                     'hook decides every rebuild.', e)
        return False
    return True


class RebuildPrecheck(nova_wsgi.Middleware):
    """Mark the server actions whose rebuild the pre-check decides."""

    def __init__(self, application):
        super().__init__(application)
        self.active = install()
        self._warned = False

    @webob.dec.wsgify
    def __call__(self, req):
        if (self.active and req.method == 'POST' and
                _ACTION.match(req.path_info)):
            context = req.environ.get('nova.context')
            if context is not None:
                rebuild_wrapper.mark(context)
            elif not self._warned:
                self._warned = True
                LOG.error('No nova.context in the request: put '
                          'image_traits_precheck after keystonecontext in '
                          'api-paste.ini. The pre-check decides nothing.')
        return self.application


def _refusal(context, instance, decision):
    """The error that refuses the rebuild: nova's answer to the user.

    409 only when a retry may change the answer; 400 otherwise. Raised
    inside ``API.rebuild``, it leaves the rebuild action as is, and nova's
    WSGI layer turns it into its error document, with the version headers
    of the request's pipeline.
    """
    if (decision.outcome == nit_decision.ERROR and
            getattr(decision, 'transient', False)):
        error = webob.exc.HTTPConflict
    else:
        error = webob.exc.HTTPBadRequest
    # NOTE(nova-image-traits): the 400 is read by its caller alone: it
    # names the host's detail only for a caller nova's policy allows, with
    # the server's owner as the target, as nova's rebuild rule has it.
    target = {'project_id': instance.project_id,
              'user_id': instance.user_id}
    return error(explanation=policy.refusal_reason(context, decision,
                                                   target=target))
