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
"""``nova-image-traits-status upgrade check``, built on oslo.upgradecheck.

It reads nova's configuration the way ``nova-status`` does: oslo.config's
search for project ``nova`` (``/etc/nova/nova.conf`` and
``/etc/nova/nova.conf.d/`` among others) unless ``--config-file`` or
``--config-dir`` is given. Exit codes are oslo.upgradecheck's: 0 when every
check succeeds, 1 when one warns, 2 when one fails, 255 when a check
crashed.

Images are read with the credentials of the cloud ``--os-cloud`` names
(clouds.yaml); without it, with nova's ``[glance]`` keystoneauth options
when they set an ``auth_type``, or else with its ``[placement]`` ones (nova's
service user), through the catalog's image service.
"""

import functools
import sys

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_image_traits import conf as nit_conf
from nova_image_traits import exception
from nova_image_traits import placement
from nova_image_traits import series
from nova_image_traits.status import api as api_check
from nova_image_traits.status import cloud
from nova_image_traits.status import conductor
from nova_image_traits.status import config
from nova_image_traits.status import derivation
from nova_image_traits.status import filters
from nova_image_traits.status import isolation
from nova_image_traits.status import series as series_check

Code = upgradecheck.Code
Result = upgradecheck.Result
PROG = 'nova-image-traits-status'


class Checks(upgradecheck.UpgradeCommands):
    """The checks, in the order they are shown.

    :param conf: the parsed ConfigOpts
    :param connection: an ``openstack.connection.Connection`` to read images
        with instead of one built from the options (for tests, embedding)
    :param proc: where the process table is mounted
    :param uids: the owners of trusted processes; root and nova by default
    """

    display_title = 'nova-image-traits upgrade check results'

    def __init__(self, conf, connection=None, proc='/proc', uids=None):
        super().__init__()
        self.conf = conf
        self._connection = connection
        #: The conductor processes of this host.
        self.conductors = conductor.find(proc, uids)
        #: The scheduler processes of this host.
        self.schedulers = conductor.find(proc, uids,
                                         names=(conductor.SCHEDULER,))

    # -- what the checks share -----------------------------------------

    @functools.cached_property
    def client(self):
        """The placement client from ``[placement]``, or why there is none."""
        try:
            return placement.get_client(self.conf, cloud.TIMEOUT)
        except exception.PlacementError as e:
            return e
        except Exception as e:
            return exception.PlacementUnreachable(
                url='[placement]', why='%s: %s' % (type(e).__name__, e))

    # -- the checks -----------------------------------------------------

    def _check_options(self):
        result = config.check_options(self.conf)
        dirs = self.conf.config_dir or []
        # NOTE(founders): a list in recent oslo.config, a string in older ones.
        dirs = [dirs] if isinstance(dirs, str) else list(dirs)
        files = list(self.conf.config_file or ()) + dirs
        result.details = '%s Read from: %s.' % (
            result.details, ', '.join(files) or 'no file (defaults)')
        return result

    def _check_placement(self):
        return cloud.check_placement(self.conf, self.client)

    def _check_filter(self):
        hooked = any(c.hooked for c in self.conductors)
        return config.check_filter(self.conf, hooked_conductor=hooked)

    def _check_nova(self):
        return series_check.check_nova(series.installed_nova())

    def _check_derivation(self):
        return derivation.check_derivation()

    def _check_conductor(self):
        hooked = [c.pid for c in self.conductors if c.hooked]
        plain = [c.pid for c in self.conductors if not c.hooked]
        filtered = (config.FILTER_NAME in
                    self.conf.filter_scheduler.enabled_filters)
        # A warning when some conductor runs nova's own check.
        warn = plain and (hooked or not filtered)
        code, details = Code.WARNING if warn else Code.SUCCESS, []
        try:
            from nova_image_traits.conductor import hook
            version = hook.verify()
            details.append('The rebuild hook matches the installed nova '
                           '(%s).' % version)
        except ImportError as e:
            details.append('nova is not installed here, so the hook cannot '
                           'be verified (%s).' % e)
        except exception.NovaImageTraitsException as e:
            code = Code.FAILURE
            details.append('%s' % e.message)
        if hooked and plain:
            details.append(
                'Conductors %s run nova-image-traits-conductor but %s run '
                'nova-conductor without the hook: rebuilds they receive '
                "get nova's own check." % (_pids(hooked), _pids(plain)))
        elif hooked:
            details.append('Conductors %s run nova-image-traits-conductor.'
                           % _pids(hooked))
        elif plain:
            details.append(
                'Conductors %s run nova-conductor without the hook%s.' % (
                    _pids(plain), '; ImageTraitsFilter decides' if filtered
                    else ", and ImageTraitsFilter is not enabled: nova's "
                    'own check decides'))
        else:
            details.append('No conductor runs on this host (processes of '
                           'root or nova under /proc).')
        return Result(code, ' '.join(details))

    def _check_isolation(self):
        return isolation.check(self.conf, self.conductors)

    def _check_precheck_filters(self):
        return filters.check(self.conf, self.schedulers)

    def _check_precheck(self):
        return api_check.check_precheck(self.conf)

    def _check_image_traits(self):
        """Read the images with the connection, or say why there is none."""
        conn = self._connection
        if conn is None:
            try:
                conn = _connect(self.conf)
            except Exception as e:
                conn = RuntimeError('cannot authenticate to read images: '
                                    '%s: %s' % (type(e).__name__, e))
        return cloud.check_image_traits(conn, self.client)

    _upgrade_checks = (
        ('[image_traits] options', _check_options),
        ('Placement API version', _check_placement),
        ('nova series', _check_nova),
        ("nova's derived requirements", _check_derivation),
        ('ImageTraitsFilter in the scheduler', _check_filter),
        ('Conductor rebuild hook', _check_conductor),
        ('Aggregate isolation set alike', _check_isolation),
        ('nova-api pre-check', _check_precheck),
        ("The pre-check's scheduler filters", _check_precheck_filters),
        ('Image traits known to placement', _check_image_traits),
    )


def _pids(pids):
    return ', '.join(str(p) for p in pids)


def _connect(conf):
    import openstack
    import openstack.connection
    if conf.command.os_cloud:
        return openstack.connect(cloud=conf.command.os_cloud,
                                 app_name=PROG)
    group = 'glance' if conf.glance.auth_type else 'placement'
    auth = ks_loading.load_auth_from_conf_options(conf, group)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    return openstack.connection.Connection(session=session, app_name=PROG)


def register_opts(conf, checks):
    """Register every option the command reads, and its sub-command."""
    nit_conf.register_opts(conf)
    config.register_opts(conf)
    filters.register_opts(conf)
    api_check.register_opts(conf)
    ks_loading.register_session_conf_options(conf, 'glance')
    ks_loading.register_auth_conf_options(conf, 'glance')

    def add_parsers(subparsers):
        upgrade = subparsers.add_parser('upgrade')
        upgrade.add_argument('check')
        upgrade.set_defaults(action_fn=checks.check)
        upgrade.add_argument(
            '--json', action='store_true',
            help='Print the results as JSON instead of a table.')
        upgrade.add_argument(
            '--os-cloud', metavar='CLOUD',
            help='Read images as the cloud CLOUD of clouds.yaml; default: '
                 "nova.conf's [glance] or [placement] credentials.")

    conf.register_cli_opt(cfg.SubCommandOpt('command', handler=add_parsers))


def main(argv=None, connection=None, proc='/proc', uids=None):
    """Run the command; return its exit code.

    :param argv: the arguments, ``sys.argv[1:]`` by default
    :param connection, proc, uids: see :class:`Checks`
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    conf = cfg.ConfigOpts()
    checks = Checks(conf, connection=connection, proc=proc, uids=uids)
    register_opts(conf, checks)
    try:
        conf(args=argv, project='nova', prog=PROG)
    except (cfg.ConfigFilesNotFoundError, cfg.ConfigFileParseError,
            cfg.ConfigFileValueError, cfg.ConfigDirNotFoundError) as e:
        sys.stderr.write('%s: error: %s\n' % (PROG, e))
        return 255
    # NOTE(founders): UpgradeCommands.check() reads --json from this module
    # global, which oslo_upgradecheck.upgradecheck.main() sets the same way.
    upgradecheck.CONF = conf
    return upgradecheck.run(conf)


if __name__ == '__main__':
    sys.exit(main())
