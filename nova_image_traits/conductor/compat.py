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
"""Whether this nova has every internal the conductor hook relies on.

:func:`verify` checks, before anything is patched, the methods the hook
replaces and wraps, their parameters, that ``rebuild_instance`` still calls
the check, and the nova objects the check uses, so that an upgraded nova
fails the conductor at start (or is reported once) instead of running
without the check.
"""

import inspect

from nova.compute import utils as compute_utils
from nova.objects import compute_node
from nova.objects import image_meta

from nova_image_traits import exception as nit_exception
from nova_image_traits import series

#: Marks the functions the hook puts on ``ComputeTaskManager``.
MARKER = '_nova_image_traits_hook'

VALIDATE = '_validate_image_traits_for_rebuild'
REBUILD = 'rebuild_instance'

#: Parameters nova calls ``_validate_image_traits_for_rebuild`` with.
_VALIDATE_PARAMS = ('self', 'context', 'instance', 'image_ref')
#: Parameters of ``rebuild_instance`` the hook relies on.
_REBUILD_PARAMS = ('self', 'context', 'instance', 'orig_image_ref',
                   'image_ref', 'orig_sys_metadata', 'bdms', 'request_spec')


class HookInstallError(nit_exception.NovaImageTraitsException):
    """This nova lacks an internal the conductor hook relies on."""

    msg_fmt = ('Cannot install the nova-image-traits rebuild hook into '
               'nova-conductor (nova %(version)s): %(why)s. This release of '
               'nova-image-traits supports %(supported)s.')

    def __init__(self, **kwargs):
        kwargs.setdefault('supported', series.supported())
        super().__init__(**kwargs)


def nova_version():
    """The running nova's version and the series it belongs to.

    For example ``'31.3.1 (2025.1)'``: what the hook verified.
    """
    try:
        from nova import version
        return series.describe(version.version_string())
    except Exception:
        return 'unknown'


def _fail(why, **kwargs):
    raise HookInstallError(version=nova_version(), why=why % kwargs)


def _param_names(func):
    return tuple(inspect.signature(func).parameters)


def verify(manager_cls):
    """Check every nova internal the hook relies on, or raise.

    :raises HookInstallError: naming the first one that changed
    """
    for name in (VALIDATE, REBUILD):
        if not callable(inspect.getattr_static(manager_cls, name, None)):
            _fail('nova.conductor.manager.ComputeTaskManager.%(name)s does '
                  'not exist', name=name)

    validate = original(manager_cls, VALIDATE)
    params = _param_names(validate)
    if params != _VALIDATE_PARAMS:
        _fail('ComputeTaskManager.%(name)s%(params)s does not have the '
              'expected parameters %(expected)s', name=VALIDATE,
              params='(%s)' % ', '.join(params),
              expected='(%s)' % ', '.join(_VALIDATE_PARAMS))

    rebuild = original(manager_cls, REBUILD)
    params = _param_names(rebuild)
    missing = [p for p in _REBUILD_PARAMS if p not in params]
    if missing or params[:2] != _REBUILD_PARAMS[:2]:
        _fail('ComputeTaskManager.%(name)s lacks the parameters %(missing)s',
              name=REBUILD, missing=', '.join(missing) or 'self, context')

    # NOTE(founders): if rebuild_instance stopped calling the check, replacing
    # the check would silently do nothing. The name appears in the code object
    # of the undecorated method as long as it is called there.
    code = getattr(inspect.unwrap(rebuild), '__code__', None)
    if code is None or VALIDATE not in code.co_names:
        _fail('ComputeTaskManager.%(rebuild)s no longer calls '
              '%(validate)s', rebuild=REBUILD, validate=VALIDATE)
    init_code = getattr(manager_cls.__init__, '__code__', None)
    if init_code is None or 'image_api' not in init_code.co_names:
        _fail('ComputeTaskManager no longer has an image_api attribute')

    # nova.exception.NoValidHost is not checked here: the hook's
    # modules subclass it at import, before anything can call verify().
    checks = (
        (image_meta.ImageMeta, 'from_image_ref'),
        (image_meta.ImageMeta, 'from_instance'),
        (compute_node.ComputeNode, 'get_by_host_and_nodename'),
        (compute_utils, 'is_volume_backed_instance'),
    )
    for owner, attr in checks:
        if not hasattr(owner, attr):
            _fail('%(owner)s.%(attr)s does not exist',
                  owner=owner.__name__, attr=attr)
    signatures = (
        (image_meta.ImageMeta.from_image_ref,
         ('context', 'image_api', 'image_ref')),
        (image_meta.ImageMeta.from_instance, ('instance',)),
        (compute_utils.is_volume_backed_instance,
         ('context', 'instance', 'bdms')),
    )
    for func, expected in signatures:
        params = _param_names(func)
        if params != expected:
            _fail('%(func)s%(params)s changed', func=func.__qualname__,
                  params='(%s)' % ', '.join(params))


def original(manager_cls, name):
    func = manager_cls.__dict__.get(name)
    if func is None:
        # Inherited: not the layout of nova 34.
        _fail('ComputeTaskManager.%(name)s is not defined by the class '
              'itself', name=name)
    return getattr(func, MARKER, func)


def manager_class():
    try:
        from nova.conductor import manager
    except ImportError as e:
        _fail('nova.conductor.manager cannot be imported: %(e)s', e=e)
    cls = getattr(manager, 'ComputeTaskManager', None)
    if cls is None:
        _fail('nova.conductor.manager.ComputeTaskManager does not exist')
    return cls


#: The step of ``rebuild_instance``'s refusal handler the hook wraps to
#: restore the server (:mod:`.refusal`), and its parameters.
NOTIFY = '_set_vm_state_and_notify'
_NOTIFY_PARAMS = ('self', 'context', 'instance_uuid', 'method', 'updates',
                  'ex', 'request_spec')


def verify_refusal_handler(manager_cls):
    """Check the step of nova's refusal handler the hook wraps, or raise.

    :raises HookInstallError: when it is gone, changed, or no longer called
        by ``rebuild_instance``
    """
    if not callable(inspect.getattr_static(manager_cls, NOTIFY, None)):
        _fail('nova.conductor.manager.ComputeTaskManager.%(name)s does '
              'not exist', name=NOTIFY)
    params = _param_names(original(manager_cls, NOTIFY))
    if params != _NOTIFY_PARAMS:
        _fail('ComputeTaskManager.%(name)s%(params)s does not have the '
              'expected parameters %(expected)s', name=NOTIFY,
              params='(%s)' % ', '.join(params),
              expected='(%s)' % ', '.join(_NOTIFY_PARAMS))
    code = getattr(inspect.unwrap(original(manager_cls, REBUILD)),
                   '__code__', None)
    if code is None or NOTIFY not in code.co_names:
        _fail('ComputeTaskManager.%(rebuild)s no longer calls %(notify)s',
              rebuild=REBUILD, notify=NOTIFY)
