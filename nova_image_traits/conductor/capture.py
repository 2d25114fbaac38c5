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
"""What ``rebuild_instance`` was called with, kept for the check it calls.

Nova calls ``_validate_image_traits_for_rebuild(context, instance,
image_ref)`` only; the original image's system metadata and the request
spec are ``rebuild_instance``'s arguments. The hook's wrapper records them
here, per thread, for the check to read.
"""

import contextlib
import threading

# NOTE(founders): created on first use, not at import: under eventlet, the
# threading.local class must be looked up after monkey patching so that each
# green thread gets its own storage. In threading mode it is the native
# thread-local, which is what nova's RPC server threads need.
_LOCAL = None
_LOCK = threading.Lock()


class Capture:
    """What ``rebuild_instance`` was called with, for our check."""

    __slots__ = ('instance_uuid', 'image_ref', 'orig_image_ref',
                 'orig_sys_metadata', 'request_spec')

    def __init__(self, instance_uuid, image_ref, orig_image_ref,
                 orig_sys_metadata, request_spec):
        self.instance_uuid = instance_uuid
        self.image_ref = image_ref
        self.orig_image_ref = orig_image_ref
        self.orig_sys_metadata = orig_sys_metadata
        self.request_spec = request_spec


def _local():
    global _LOCAL
    if _LOCAL is None:
        with _LOCK:
            if _LOCAL is None:
                _LOCAL = threading.local()
    return _LOCAL


def prepare():
    """Create the thread-local storage; call after monkey patching."""
    _local()


@contextlib.contextmanager
def remember(capture):
    """Keep ``capture`` for this thread while the block runs."""
    local = _local()
    previous = getattr(local, 'capture', None)
    local.capture = capture
    try:
        yield capture
    finally:
        local.capture = previous


def captured(instance, image_ref):
    """Return the capture of this rebuild to ``image_ref``, or None."""
    capture = getattr(_LOCAL, 'capture', None) if _LOCAL else None
    if (capture is None or capture.instance_uuid != instance.uuid or
            capture.image_ref != image_ref):
        return None
    return capture
