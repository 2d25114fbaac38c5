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
"""The pre-check inside nova's own ``nova.compute.api.API.rebuild``.

:func:`install` wraps ``API.rebuild`` once per nova-api worker. For a
request the paste filter marked (:func:`mark`), the wrapper:

1. starts what the decision will read whatever the image
   (:class:`.decide.Ahead`), in worker threads, and calls nova's rebuild;
2. lets nova run every check it makes (the schema and policy in the
   controller; lock, state, vTPM, accelerators and shares in its
   decorators; the image, the flavor, NUMA, quotas, the root volume);
3. at nova's first write, ``instance.save(expected_task_state=[None])``,
   reads nova's own values in ``API.rebuild``'s frame (the new image as
   nova read it, the current image as nova found it, from the root
   volume's image metadata for a volume-backed server, the request spec,
   whether it is volume-backed), decides, and either lets the save go on
   or refuses by raising a ``webob`` 400 or 409, which the rebuild action
   lets out (``expected_errors``) and nova's WSGI layer answers with its
   own error document and headers, through every wrapper of the pipeline
   (``legacy_v2_compatible`` included).

A failure of the pre-check itself (a bug, a misconfiguration, an
unexpected answer) lets the save go on: the conductor hook decides, as for
any request the pre-check cannot decide. :mod:`.compat` verifies every name
this relies on before :func:`install` wraps anything.
"""

import functools
import sys
import threading

from oslo_log import log as logging

from nova_image_traits.api import compat
from nova_image_traits.api import decide as nit_decide
from nova_image_traits import decision as nit_decision
from nova_image_traits import exception

LOG = logging.getLogger(__name__)

#: The attribute of a request context the paste filter sets.
MARK = '_nova_image_traits_precheck'
#: The attribute of the wrapper that holds nova's own ``API.rebuild``.
MARKER_ATTR = compat.MARKER

_lock = threading.Lock()


def mark(context):
    """Have the wrapper decide the rebuilds of this request."""
    setattr(context, MARK, True)


def marked(context):
    return getattr(context, MARK, False) is True


def installed(api_cls=None):
    return getattr(_api_class(api_cls).__dict__.get('rebuild'), MARKER_ATTR,
                   None) is not None


def _api_class(api_cls):
    if api_cls is None:
        from nova.compute import api as compute_api
        api_cls = compute_api.API
    return api_cls


def install(refuse, api_cls=None):
    """Wrap ``API.rebuild``, once; :mod:`.compat` first.

    :param refuse: called with the request context, the instance and a
        refusing :class:`~nova_image_traits.decision.Decision`; returns the
        ``webob`` exception to raise
    :raises compat.PrecheckInstallError: this nova is not supported; nothing
        was changed
    """
    api_cls = _api_class(api_cls)
    with _lock:
        if installed(api_cls):
            return
        compat.verify(api_cls)
        nova_rebuild = compat.original(api_cls)
        body_code = compat.undecorated(api_cls).__code__

        @functools.wraps(nova_rebuild)
        def rebuild(self, context, instance, image_href, *args, **kwargs):
            if not marked(context):
                return nova_rebuild(self, context, instance, image_href,
                                    *args, **kwargs)
            return _rebuild(nova_rebuild, body_code, refuse, self, context,
                            instance, image_href, *args, **kwargs)

        setattr(rebuild, MARKER_ATTR, nova_rebuild)
        api_cls.rebuild = rebuild
        LOG.info('The image traits pre-check decides rebuilds inside '
                 'nova.compute.api.API.rebuild (nova %s).',
                 compat.conductor_compat.nova_version())


def uninstall(api_cls=None):
    """Put nova's own ``API.rebuild`` back (for tests)."""
    api_cls = _api_class(api_cls)
    with _lock:
        current = api_cls.__dict__.get('rebuild')
        nova_rebuild = getattr(current, MARKER_ATTR, None)
        if nova_rebuild is not None:
            api_cls.rebuild = nova_rebuild


def _starts_ahead(instance, image_href):
    # The same image of an image-backed server is decided only when its
    # properties changed (judge_same_image_rebuild), which is known once
    # nova read it: nothing is sent ahead, so that an unchanged image costs
    # no placement request. Nothing else is known before nova reads it.
    if not instance.host:
        return False
    return not (instance.image_ref and instance.image_ref == image_href)


def _rebuild(nova_rebuild, body_code, refuse, api, context, instance,
             image_href, *args, **kwargs):
    ahead = None
    if _starts_ahead(instance, image_href):
        ahead = nit_decide.Ahead(context, instance)
    state = {'decided': False}
    save = instance.save

    def first_write(*save_args, **save_kwargs):
        caller = sys._getframe(1)
        if (not state['decided'] and caller.f_code is body_code and
                save_kwargs.get('expected_task_state') == [None]):
            state['decided'] = True
            values = {name: caller.f_locals.get(name)
                      for name in compat.LOCALS}
            del caller
            error = _verdict(refuse, context, instance, values, ahead)
            if error is not None:
                raise error
        return save(*save_args, **save_kwargs)

    # NOTE(nova-image-traits): on this object only, for this call only.
    instance.save = first_write
    try:
        return nova_rebuild(api, context, instance, image_href, *args,
                            **kwargs)
    finally:
        try:
            del instance.save
        except AttributeError:
            pass


def _verdict(refuse, context, instance, values, ahead):
    """The ``webob`` error refusing the rebuild, or None to let it go on."""
    try:
        decision = nit_decide.decide(context, instance, values, ahead)
    except exception.NovaImageTraitsException as e:
        # NOTE(nova-image-traits): a known failure (the compute node not
        # read in time): no traceback.
        LOG.warning('The image traits pre-check could not decide the '
                    'rebuild of server %(uuid)s (%(error)s); nova goes on '
                    'and the conductor decides.',
                    {'uuid': instance.uuid, 'error': e})
        return None
    except Exception:
        LOG.exception('The image traits pre-check failed for the rebuild of '
                      'server %s; nova goes on and the conductor decides.',
                      instance.uuid)
        return None
    if decision is None or decision.allowed:
        return None
    if (decision.outcome == nit_decision.ERROR and
            not getattr(decision, 'transient', False)):
        # NOTE(nova-image-traits): not the user's fault, and no retry
        # changes it: a bug, or a misconfiguration of nova-image-traits or
        # of placement. The conductor decides; the status check reports it.
        LOG.warning('The image traits pre-check could not decide the '
                    'rebuild of server %(uuid)s (%(cause)s: %(detail)s); '
                    'nova goes on and the conductor decides.',
                    {'uuid': instance.uuid, 'cause': decision.cause,
                     'detail': decision.detail})
        return None
    try:
        return refuse(context, instance, decision)
    except Exception:
        # NOTE(nova-image-traits): wording the refusal must not turn it into
        # nova's 500: nova goes on, and the conductor refuses.
        LOG.exception('The image traits pre-check refused the rebuild of '
                      'server %s but could not answer; nova goes on and the '
                      'conductor decides.', instance.uuid)
        return None
