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
needs, ``[image_traits] hook_on_unsupported_nova`` decides: by default the
conductor starts with nova's own check in place and a CRITICAL message is
logged once; with ``refuse_to_start`` it exits with an error before the
service starts.
"""

# NOTE(founders): import nova's launcher first, exactly as nova-conductor
# would: its import decides between eventlet monkey patching and native
# threading (nova.monkey_patch.patch), which must happen before anything else
# of nova or of ours is imported.
from nova.cmd import conductor as nova_conductor

import argparse
import functools
import sys

from oslo_config import cfg
from oslo_log import log as oslo_logging

from nova_image_traits.conductor import hook
from nova_image_traits.conf import image_traits as image_traits_conf


def on_unsupported_nova(argv):
    """Read ``[image_traits] hook_on_unsupported_nova`` as nova would.

    Nova parses its configuration only inside its own ``main()``, so the
    option is read here from the same files (``argv``'s ``--config-file``
    and ``--config-dir``) with a private ConfigOpts. The default is
    returned when they cannot be read: nova will report the problem itself.
    """
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument('--config-file', action='append')
    parser.add_argument('--config-dir', action='append')
    conf = cfg.ConfigOpts()
    image_traits_conf.register_opts(conf)
    try:
        found, _nova_args = parser.parse_known_args(argv)
        conf(args=[], project='nova', default_config_files=found.config_file,
             default_config_dirs=found.config_dir)
        return conf.image_traits.hook_on_unsupported_nova
    except Exception:
        return 'run_nova_check'


def _after_logging_setup(report):
    """Call ``report()`` once nova has set up logging.

    The hook is installed before ``nova.cmd.conductor.main()`` parses the
    configuration and calls oslo.log's ``setup``; a line logged then would
    reach no handler, so no log file would show whether the hook is active.
    Wrap ``setup`` for this process until it has run once.
    """
    original = oslo_logging.setup

    @functools.wraps(original)
    def setup(*args, **kwargs):
        oslo_logging.setup = original
        result = original(*args, **kwargs)
        report()
        return result

    oslo_logging.setup = setup


def main():
    try:
        hook.install()
    except Exception as e:
        # Only a nova the hook does not fit may start with nova's own check.
        if not isinstance(e, hook.HookInstallError) or on_unsupported_nova(
                sys.argv[1:]) == 'refuse_to_start':
            sys.stderr.write('nova-image-traits-conductor: %s\n' % e)
            return 1
        # NOTE(founders): to stderr now, and to nova's log once it is set up.
        hook.report_unsupported(e)
        _after_logging_setup(functools.partial(
            hook.report_unsupported, e))
    else:
        _after_logging_setup(hook.log_installed)
    return nova_conductor.main()


if __name__ == '__main__':
    sys.exit(main())
