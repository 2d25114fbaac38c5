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
"""``nova-image-traits-conductor``: nova-conductor with the rebuild hook.

Run it instead of ``nova-conductor``, with the same arguments and
configuration files. It installs
:func:`nova_image_traits.conductor.hook.install` and then runs nova's own
``nova.cmd.conductor.main()``. If this nova lacks an internal the hook
needs, it exits with an error before the service starts.
"""

# NOTE: import nova's launcher first, exactly as nova-conductor would: its
# import decides between eventlet monkey patching and native threading
# (nova.monkey_patch.patch), which must happen before anything else of nova
# or of ours is imported.
from nova.cmd import conductor as nova_conductor

import functools
import sys

from oslo_log import log as oslo_logging


def install_hook():
    """Install the conductor rebuild hook; what :func:`main` does first.

    :raises nova_image_traits.conductor.hook.HookInstallError: when the
        hook cannot be installed into this nova
    """
    from nova_image_traits.conductor import hook
    hook.install()
    return hook


def _log_installed_after_logging_setup(hook):
    """Log the hook's "installed" line once nova has set up logging.

    The hook is installed before ``nova.cmd.conductor.main()`` parses the
    configuration and calls oslo.log's ``setup``; a line logged then would
    reach no handler, so no log file would show that the hook is active.
    Wrap ``setup`` for this process until it has run once.
    """
    original = oslo_logging.setup

    @functools.wraps(original)
    def setup(*args, **kwargs):
        oslo_logging.setup = original
        result = original(*args, **kwargs)
        hook.log_installed()
        return result

    oslo_logging.setup = setup


def main():
    try:
        hook = install_hook()
    except Exception as e:
        sys.stderr.write('nova-image-traits-conductor: %s\n' % e)
        return 1
    _log_installed_after_logging_setup(hook)
    return nova_conductor.main()


if __name__ == '__main__':
    sys.exit(main())
