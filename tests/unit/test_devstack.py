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
"""Run each phase of the devstack plugin against recorded stand-ins.

Devstack cannot run here, so ``tests/unit/devstack_stubs.sh`` defines the
devstack functions the plugin calls. The ini functions really edit a
temporary ``nova.conf`` with devstack's semantics; the others only record
their calls. Each test sources the stubs, ``devstack/settings`` and
``devstack/plugin.sh`` in ``bash`` with errexit on, as ``stack.sh`` does,
and checks the resulting files and calls.
"""

import collections
import importlib.util
import os
import subprocess
import sys

import fixtures
import testtools

from nova_image_traits.conf import image_traits

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STUBS = os.path.join(HERE, 'devstack_stubs.sh')
SETTINGS = os.path.join(ROOT, 'devstack', 'settings')
PLUGIN = os.path.join(ROOT, 'devstack', 'plugin.sh')

FILTER_PATH = 'nova_image_traits.filters.image_traits_filter.ImageTraitsFilter'
ALL_FILTERS = 'nova.scheduler.filters.all_filters'
# What devstack's lib/nova (create_nova_conf) writes: its NOVA_FILTERS,
# which no longer has AvailabilityZoneFilter (dropped in 2023).
DEVSTACK_FILTERS = ('ComputeFilter,'
                    'ComputeCapabilitiesFilter,ImagePropertiesFilter,'
                    'ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,'
                    'SameHostFilter,DifferentHostFilter')
# nova 34's default [filter_scheduler] enabled_filters.
NOVA_DEFAULT_FILTERS = ('ComputeFilter,ComputeCapabilitiesFilter,'
                        'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
                        'ServerGroupAffinityFilter')
BIN_DIR = '/opt/stack/data/venv/bin'

NOVA_CONF = """\
[DEFAULT]
debug = True
transport_url = rabbit://stackrabbit:secret@127.0.0.1:5672/

[filter_scheduler]
enabled_filters = %s
track_instance_changes = False

[placement]
auth_type = password
region_name = RegionOne
""" % DEVSTACK_FILTERS

CELL_CONF = """\
[DEFAULT]
transport_url = rabbit://stackrabbit:secret@127.0.0.1:5672/nova_cell1

[database]
connection = mysql+pymysql://root:secret@127.0.0.1/nova_cell1
"""


def read_ini(path):
    """Return {section: [(option, value), ...]}, keeping repeated options."""
    sections = collections.OrderedDict()
    current = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in '#;':
                continue
            if line.startswith('[') and line.endswith(']'):
                current = sections.setdefault(line[1:-1], [])
                continue
            key, _sep, value = line.partition('=')
            current.append((key.strip(), value.strip()))
    return sections


def values(ini, section, option):
    return [v for k, v in ini.get(section, []) if k == option]


def value(ini, section, option):
    found = values(ini, section, option)
    if len(found) != 1:
        raise AssertionError('[%s] %s has %d values: %r' % (
            section, option, len(found), found))
    return found[0]


class DevstackPluginTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.dest = os.path.join(self.tmp, 'opt', 'stack')
        self.conf_dir = os.path.join(self.tmp, 'etc', 'nova')
        os.makedirs(self.conf_dir)
        self.nova_conf = os.path.join(self.conf_dir, 'nova.conf')
        self.cell_conf = os.path.join(self.conf_dir, 'nova_cell1.conf')
        self.write(self.nova_conf, NOVA_CONF)
        self.write(self.cell_conf, CELL_CONF)
        self.log = os.path.join(self.tmp, 'calls.log')
        self.env = {
            'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
            'STUB_LOG': self.log,
            'DEST': self.dest,
            'NOVA_CONF_DIR': self.conf_dir,
            'NOVA_CONF': self.nova_conf,
            'NOVA_COND_CONF': self.nova_conf,
            'NOVA_BIN_DIR': BIN_DIR,
            'SYSTEMD_DIR': os.path.join(self.tmp, 'systemd'),
            # Most tests check the filter's configuration too; its default
            # (off) is checked by TestSettings and TestOneSource.
            'NOVA_IMAGE_TRAITS_ENABLE_FILTER': 'True',
            'NOVA_NUM_CELLS': '1',
            'CELLSV2_SETUP': 'superconductor',
            'ENABLED_SERVICES': ('key,n-api,n-api-meta,n-sch,n-cond,'
                                 'n-super-cond,n-cond-cell1,n-cpu,'
                                 'placement-api,g-api'),
        }

    @staticmethod
    def write(path, text):
        with open(path, 'w') as f:
            f.write(text)

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def run_bash(self, script, *args, expect_rc=0, **env):
        """Run ``script`` after sourcing the stubs; return the calls made."""
        if os.path.exists(self.log):
            os.unlink(self.log)
        full_env = dict(self.env, **env)
        proc = subprocess.run(
            ['bash', '-c', 'set -o errexit\nsource "%s"\n%s' % (STUBS, script),
             'plugin.sh'] + list(args),
            env=full_env, cwd=self.tmp, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        self.addDetail('bash-output-%d' % id(proc),
                       testtools.content.text_content(proc.stdout))
        self.assertEqual(expect_rc, proc.returncode, proc.stdout)
        self.output = proc.stdout
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [tuple(line.rstrip('\n').split('|')) for line in f]

    def run_phase(self, *args, **env):
        """Source settings and plugin.sh with ``args``, as devstack does."""
        return self.run_bash(
            'source "%s"\nsource "%s" "$@"' % (SETTINGS, PLUGIN),
            *args, **env)

    def unit(self, service, command):
        d = os.path.join(self.tmp, 'systemd')
        os.makedirs(d, exist_ok=True)
        self.write(os.path.join(d, 'devstack@%s.service' % service),
                   '[Service]\nExecStart = %s\n' % command)

    def calls_of(self, calls, name):
        return [c[1:] for c in calls if c[0] == name]


class TestSettings(DevstackPluginTestCase):

    def _settings(self, **env):
        out = os.path.join(self.tmp, 'settings.out')
        calls = self.run_bash(
            'source "%s"\nfor v in ${!NOVA_IMAGE_TRAITS_*}; do '
            'echo "$v=${!v}"; done > "%s"' % (SETTINGS, out), **env)
        settings = dict(line.split('=', 1)
                        for line in self.read(out).splitlines())
        return calls, settings

    def test_defines_plugin_and_defaults(self):
        del self.env['NOVA_IMAGE_TRAITS_ENABLE_FILTER']
        calls, settings = self._settings()
        self.assertIn(('define_plugin', 'nova-image-traits'), calls)
        self.assertEqual({
            'NOVA_IMAGE_TRAITS_DIR': os.path.join(self.dest,
                                                  'nova-image-traits'),
            'NOVA_IMAGE_TRAITS_STRATEGY': 'held_providers',
            'NOVA_IMAGE_TRAITS_FALLBACK': 'root_traits',
            'NOVA_IMAGE_TRAITS_ON_ERROR': 'reject',
            'NOVA_IMAGE_TRAITS_ENABLE_FILTER': 'False',
            'NOVA_IMAGE_TRAITS_ENABLE_HOOK': 'True',
            'NOVA_IMAGE_TRAITS_ENABLE_PRECHECK': 'False',
            'NOVA_IMAGE_TRAITS_PRECHECK_FACTORY':
                'nova_image_traits.api.precheck:RebuildPrecheck.factory',
        }, settings)

    def test_local_conf_overrides(self):
        _calls, settings = self._settings(
            NOVA_IMAGE_TRAITS_STRATEGY='tree_traits',
            NOVA_IMAGE_TRAITS_ENABLE_HOOK='false',
            NOVA_IMAGE_TRAITS_DIR='/src/nit')
        self.assertEqual('tree_traits', settings['NOVA_IMAGE_TRAITS_STRATEGY'])
        self.assertEqual('False', settings['NOVA_IMAGE_TRAITS_ENABLE_HOOK'])
        self.assertEqual('/src/nit', settings['NOVA_IMAGE_TRAITS_DIR'])


class TestInstall(DevstackPluginTestCase):

    def test_setup_develop_of_the_plugin_dir(self):
        before = self.read(self.nova_conf)
        calls = self.run_phase('stack', 'install')
        self.assertEqual(
            [(os.path.join(self.dest, 'nova-image-traits'),)],
            self.calls_of(calls, 'setup_develop'))
        self.assertEqual([], self.calls_of(calls, 'run_process'))
        self.assertEqual(before, self.read(self.nova_conf))

    def test_custom_dir(self):
        calls = self.run_phase('stack', 'install',
                               NOVA_IMAGE_TRAITS_DIR='/src/nit')
        self.assertEqual([('/src/nit',)],
                         self.calls_of(calls, 'setup_develop'))


class TestPostConfig(DevstackPluginTestCase):

    def test_filter_available_and_enabled(self):
        calls = self.run_phase('stack', 'post-config')
        ini = read_ini(self.nova_conf)
        self.assertEqual(
            [ALL_FILTERS, FILTER_PATH],
            values(ini, 'filter_scheduler', 'available_filters'))
        self.assertEqual(
            DEVSTACK_FILTERS + ',ImageTraitsFilter',
            value(ini, 'filter_scheduler', 'enabled_filters'))
        # The multi-valued option is extended with iniadd, never iniset.
        self.assertIn((self.nova_conf, 'filter_scheduler',
                       'available_filters', FILTER_PATH),
                      self.calls_of(calls, 'iniadd'))
        self.assertNotIn('available_filters',
                         [c[2] for c in self.calls_of(calls, 'iniset')])
        # Everything else is left alone.
        self.assertEqual('False', value(ini, 'filter_scheduler',
                                        'track_instance_changes'))
        self.assertEqual('True', value(ini, 'DEFAULT', 'debug'))
        self.assertEqual('password', value(ini, 'placement', 'auth_type'))
        self.assertEqual([], self.calls_of(calls, 'run_process'))

    def test_image_traits_options(self):
        self.run_phase('stack', 'post-config')
        for path in (self.nova_conf, self.cell_conf):
            ini = read_ini(path)
            # devstack's iniset adds a new option right after the section
            # header, so the order is reversed; it does not matter.
            self.assertEqual(
                {'strategy': 'held_providers',
                 'fallback_strategy': 'root_traits',
                 'on_placement_error': 'reject'},
                dict(ini['image_traits']), path)
            self.assertEqual(3, len(ini['image_traits']))
        # The cell conductor's file gets no filter configuration.
        self.assertNotIn('filter_scheduler', read_ini(self.cell_conf))

    def test_image_traits_options_from_settings(self):
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_STRATEGY='allocation_traits',
                       NOVA_IMAGE_TRAITS_FALLBACK='tree_traits',
                       NOVA_IMAGE_TRAITS_ON_ERROR='accept')
        ini = read_ini(self.nova_conf)
        self.assertEqual('allocation_traits',
                         value(ini, 'image_traits', 'strategy'))
        self.assertEqual('tree_traits',
                         value(ini, 'image_traits', 'fallback_strategy'))
        self.assertEqual('accept',
                         value(ini, 'image_traits', 'on_placement_error'))

    def test_idempotent(self):
        self.run_phase('stack', 'post-config')
        once = self.read(self.nova_conf)
        cell_once = self.read(self.cell_conf)
        self.run_phase('stack', 'post-config')
        self.assertEqual(once, self.read(self.nova_conf))
        self.assertEqual(cell_once, self.read(self.cell_conf))
        ini = read_ini(self.nova_conf)
        self.assertEqual(1, values(ini, 'filter_scheduler',
                                   'available_filters').count(FILTER_PATH))
        self.assertEqual(1, value(ini, 'filter_scheduler',
                                  'enabled_filters').split(',').count(
                                      'ImageTraitsFilter'))

    def test_existing_custom_filters_kept(self):
        self.write(self.nova_conf, """\
[filter_scheduler]
available_filters = nova.scheduler.filters.all_filters
available_filters = my_filters.MyFilter
enabled_filters = MyFilter,ComputeFilter
""")
        self.run_phase('stack', 'post-config')
        ini = read_ini(self.nova_conf)
        self.assertEqual(
            [ALL_FILTERS, 'my_filters.MyFilter', FILTER_PATH],
            values(ini, 'filter_scheduler', 'available_filters'))
        self.assertEqual('MyFilter,ComputeFilter,ImageTraitsFilter',
                         value(ini, 'filter_scheduler', 'enabled_filters'))

    def test_available_filters_without_all_filters_kept(self):
        # An operator who narrowed available_filters keeps that choice.
        self.write(self.nova_conf, """\
[filter_scheduler]
available_filters = nova.scheduler.filters.compute_filter.ComputeFilter
enabled_filters = ComputeFilter
""")
        self.run_phase('stack', 'post-config')
        ini = read_ini(self.nova_conf)
        self.assertEqual(
            ['nova.scheduler.filters.compute_filter.ComputeFilter',
             FILTER_PATH],
            values(ini, 'filter_scheduler', 'available_filters'))

    def test_already_enabled_not_duplicated(self):
        self.write(self.nova_conf, """\
[filter_scheduler]
available_filters = %s
available_filters = %s
enabled_filters = ComputeFilter,ImageTraitsFilter,ImagePropertiesFilter
""" % (ALL_FILTERS, FILTER_PATH))
        before = read_ini(self.nova_conf)['filter_scheduler']
        self.run_phase('stack', 'post-config')
        self.assertEqual(before, read_ini(self.nova_conf)['filter_scheduler'])

    def test_unset_enabled_filters_starts_from_nova_default(self):
        # Appending to nothing would leave ImageTraitsFilter alone and
        # silently disable nova's default filters.
        self.write(self.nova_conf, '[DEFAULT]\ndebug = True\n')
        self.run_phase('stack', 'post-config')
        ini = read_ini(self.nova_conf)
        self.assertEqual(NOVA_DEFAULT_FILTERS + ',ImageTraitsFilter',
                         value(ini, 'filter_scheduler', 'enabled_filters'))
        self.assertEqual([ALL_FILTERS, FILTER_PATH],
                         values(ini, 'filter_scheduler', 'available_filters'))

    def test_filter_disabled(self):
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_ENABLE_FILTER='False')
        ini = read_ini(self.nova_conf)
        self.assertEqual([], values(ini, 'filter_scheduler',
                                    'available_filters'))
        self.assertEqual(DEVSTACK_FILTERS,
                         value(ini, 'filter_scheduler', 'enabled_filters'))
        # The conductors still get their options.
        self.assertEqual('held_providers',
                         value(ini, 'image_traits', 'strategy'))

    def test_compute_only_node_untouched(self):
        before = self.read(self.nova_conf)
        cell_before = self.read(self.cell_conf)
        self.run_phase('stack', 'post-config', ENABLED_SERVICES='n-cpu,q-agt')
        self.assertEqual(before, self.read(self.nova_conf))
        self.assertEqual(cell_before, self.read(self.cell_conf))

    def test_singleconductor_writes_only_nova_conf(self):
        cell_before = self.read(self.cell_conf)
        self.run_phase('stack', 'post-config',
                       CELLSV2_SETUP='singleconductor',
                       ENABLED_SERVICES='n-api,n-sch,n-cond,n-cpu')
        self.assertEqual(cell_before, self.read(self.cell_conf))
        self.assertEqual('held_providers', value(
            read_ini(self.nova_conf), 'image_traits', 'strategy'))


class TestExtra(DevstackPluginTestCase):

    def setUp(self):
        super().setUp()
        self.run_phase('stack', 'post-config')

    def test_conductors_restarted_with_hook(self):
        calls = self.run_phase('stack', 'extra')
        hook = BIN_DIR + '/nova-image-traits-conductor --config-file '
        self.assertEqual(
            [('stop_process', 'n-super-cond'),
             ('run_process', 'n-super-cond', hook + self.nova_conf),
             ('stop_process', 'n-cond-cell1'),
             ('run_process', 'n-cond-cell1', hook + self.cell_conf)],
            [c for c in calls if c[0] in ('stop_process', 'run_process')])
        for call in self.calls_of(calls, 'run_process'):
            self.assertNotIn('/nova-conductor ', call[1])

    def test_every_cell(self):
        calls = self.run_phase(
            'stack', 'extra', NOVA_NUM_CELLS='2',
            ENABLED_SERVICES='n-super-cond,n-cond-cell1,n-cond-cell2')
        self.assertEqual(
            ['n-super-cond', 'n-cond-cell1', 'n-cond-cell2'],
            [c[0] for c in self.calls_of(calls, 'run_process')])
        self.assertTrue(self.calls_of(calls, 'run_process')[2][1].endswith(
            os.path.join(self.conf_dir, 'nova_cell2.conf')))

    def test_singleconductor(self):
        calls = self.run_phase('stack', 'extra',
                               CELLSV2_SETUP='singleconductor',
                               ENABLED_SERVICES='n-api,n-sch,n-cond,n-cpu')
        self.assertEqual(
            [('stop_process', 'n-cond'),
             ('run_process', 'n-cond', BIN_DIR +
              '/nova-image-traits-conductor --config-file ' +
              self.nova_conf)],
            [c for c in calls if c[0] in ('stop_process', 'run_process')])

    def test_hook_disabled(self):
        calls = self.run_phase('stack', 'extra',
                               NOVA_IMAGE_TRAITS_ENABLE_HOOK='False')
        self.assertEqual([], self.calls_of(calls, 'run_process'))
        self.assertEqual([], self.calls_of(calls, 'stop_process'))

    def test_no_conductor_on_this_node(self):
        calls = self.run_phase('stack', 'extra', ENABLED_SERVICES='n-cpu')
        self.assertEqual([], self.calls_of(calls, 'run_process'))

    def test_other_phases_do_not_restart(self):
        for phase in (('stack', 'pre-install'), ('stack', 'install'),
                      ('stack', 'post-config'), ('stack', 'test-config')):
            calls = self.run_phase(*phase)
            self.assertEqual([], self.calls_of(calls, 'run_process'), phase)


class TestUnstackAndClean(DevstackPluginTestCase):

    def test_unstack_changes_nothing(self):
        self.run_phase('stack', 'post-config')
        before = self.read(self.nova_conf)
        calls = self.run_phase('unstack')
        self.assertEqual(before, self.read(self.nova_conf))
        self.assertEqual([], self.calls_of(calls, 'run_process'))

    def test_clean_is_a_no_op(self):
        # devstack's clean.sh deletes $NOVA_CONF_DIR right after the
        # plugins' clean phase.
        self.run_phase('stack', 'post-config')
        before = (self.read(self.nova_conf), self.read(self.cell_conf))
        calls = self.run_phase('clean')
        self.assertEqual(before, (self.read(self.nova_conf),
                                  self.read(self.cell_conf)))
        self.assertEqual([], [c for c in calls if c[0] not in (
            'echo_summary', 'define_plugin')])


class TestVerify(DevstackPluginTestCase):
    """stack extra fails loudly when local.conf undid the plugin."""

    def setUp(self):
        super().setUp()
        self.run_phase('stack', 'post-config')

    def override(self, option, *values):
        """What devstack's merge of local.conf's post-config does."""
        self.run_bash('iniset_multiline "%s" filter_scheduler %s %s' % (
            self.nova_conf, option, ' '.join(values)))

    def test_passes_after_post_config_and_restart(self):
        self.run_phase('stack', 'extra')
        self.assertIn(BIN_DIR + '/nova-image-traits-conductor', self.read(
            os.path.join(self.tmp, 'systemd',
                         'devstack@n-super-cond.service')))

    def test_enabled_filters_replaced_by_local_conf(self):
        self.override('enabled_filters', 'ComputeFilter')
        calls = self.run_phase('stack', 'extra', expect_rc=1)
        self.assertIn('enabled_filters', self.output)
        self.assertIn('lacks ImageTraitsFilter', self.output)
        self.assertEqual(1, len(self.calls_of(calls, 'die')))

    def test_available_filters_replaced_by_local_conf(self):
        self.override('available_filters', ALL_FILTERS)
        self.run_phase('stack', 'extra', expect_rc=1)
        self.assertIn('available_filters', self.output)
        self.assertIn('lacks ' + FILTER_PATH, self.output)

    def test_filter_checks_skipped_when_filter_disabled(self):
        self.override('enabled_filters', 'ComputeFilter')
        self.run_phase('stack', 'extra',
                       NOVA_IMAGE_TRAITS_ENABLE_FILTER='False')

    def test_conductors_never_restarted_with_the_hook(self):
        self.unit('n-cond-cell1',
                  BIN_DIR + '/nova-conductor --config-file ' + self.cell_conf)
        self.run_bash('source "%s"\nsource "%s"\n'
                      'verify_nova_image_traits' % (SETTINGS, PLUGIN),
                      expect_rc=1)
        self.assertIn('n-super-cond runs', self.output)

    def test_conductor_that_did_not_stay_up_fails(self):
        d = os.path.join(self.tmp, 'systemd')
        os.makedirs(d, exist_ok=True)
        self.write(os.path.join(d, 'devstack@n-super-cond.service.state'),
                   'failed\n')
        self.run_phase('stack', 'extra', expect_rc=1,
                       NOVA_IMAGE_TRAITS_START_WAIT='0')
        self.assertIn('devstack@n-super-cond is failed', self.output)

    def test_conductor_without_the_hook_installed_fails(self):
        # The launcher ran, but installed no hook (an unsupported nova with
        # hook_on_unsupported_nova = run_nova_check): the unit is active and
        # names nova-image-traits-conductor, and yet nova's check decides.
        self.run_phase('stack', 'extra', expect_rc=1,
                       NOVA_IMAGE_TRAITS_START_WAIT='1',
                       STUB_HOOK_INSTALLS='False')
        self.assertIn("did not log 'nova-image-traits rebuild hook "
                      "installed in nova-conductor'", self.output)

    def test_conductor_unit_rewritten_after_the_restart(self):
        self.run_phase('stack', 'extra')
        self.unit('n-cond-cell1',
                  BIN_DIR + '/nova-conductor --config-file ' + self.cell_conf)
        self.run_bash('source "%s"\nsource "%s"\n'
                      'verify_nova_image_traits' % (SETTINGS, PLUGIN),
                      expect_rc=1)
        self.assertIn("n-cond-cell1 runs '%s/nova-conductor" % BIN_DIR,
                      self.output)


class TestOneSource(DevstackPluginTestCase):
    """README, devstack plugin and deployment job set the same options."""

    def readme_blocks(self):
        with open(os.path.join(ROOT, 'README.rst')) as f:
            text = f.read()
        section = text[text.index('Enable it\n'):text.index(
            'Documentation\n')]
        blocks = []
        for block in section.split('.. code-block:: ini\n')[1:]:
            lines = []
            for line in block.splitlines()[1:]:
                if line and not line.startswith('    '):
                    break
                lines.append(line[4:])
            path = os.path.join(self.tmp, 'readme-%d.conf' % len(blocks))
            self.write(path, '\n'.join(lines) + '\n')
            blocks.append(read_ini(path))
        return blocks

    def deploy_job(self):
        """The job's configuration files (tools/deploy/service_config.py)."""
        tools = os.path.join(ROOT, 'tools', 'deploy')
        # It imports the modules beside it by name, as when deploy.py runs.
        self.useFixture(fixtures.MonkeyPatch('sys.path', [tools] + sys.path))
        for name in os.listdir(tools):
            if name.endswith('.py'):
                self.addCleanup(sys.modules.pop, name[:-3], None)
        spec = importlib.util.spec_from_file_location(
            'nit_deploy_job', os.path.join(tools, 'service_config.py'))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def test_image_traits_options_agree(self):
        hook_block, filter_block = self.readme_blocks()
        readme = dict(hook_block['image_traits'])
        del self.env['NOVA_IMAGE_TRAITS_ENABLE_FILTER']
        self.run_phase('stack', 'post-config')
        devstack = dict(read_ini(self.nova_conf)['image_traits'])
        job = self.deploy_job()
        deployed = dict(job.IMAGE_TRAITS_OPTIONS,
                        strategy=readme['strategy'])
        self.assertEqual(readme, devstack)
        self.assertEqual(readme, deployed)
        # The strategy the README and devstack set is the package's
        # default; the deployment job runs every strategy.
        self.assertEqual(image_traits.ALL_OPTS[0].default,
                         readme['strategy'])
        self.assertEqual('strategy', image_traits.ALL_OPTS[0].name)

    def test_hook_without_the_filter_everywhere(self):
        hook_block, filter_block = self.readme_blocks()
        self.assertNotIn('filter_scheduler', hook_block)
        self.assertIn('ImageTraitsFilter', value(
            filter_block, 'filter_scheduler', 'enabled_filters'))
        del self.env['NOVA_IMAGE_TRAITS_ENABLE_FILTER']
        self.run_phase('stack', 'post-config')
        self.run_phase('stack', 'extra')
        self.assertNotIn('ImageTraitsFilter', value(
            read_ini(self.nova_conf), 'filter_scheduler', 'enabled_filters'))
        self.assertIn('nova-image-traits-conductor', self.read(os.path.join(
            self.tmp, 'systemd', 'devstack@n-super-cond.service')))

    def test_filter_options_agree(self):
        # The deployment job runs the filter beside the hook (to check a
        # refusal by the filter alone), set as a deployer sets it.
        _hook_block, filter_block = self.readme_blocks()
        job = self.deploy_job()
        self.assertEqual(
            values(filter_block, 'filter_scheduler', 'available_filters'),
            job.FILTER_SCHEDULER_OPTIONS['available_filters'])
        self.assertTrue(value(filter_block, 'filter_scheduler',
                              'enabled_filters').endswith(
                                  ',ImageTraitsFilter'))
        # devstack, on a nova.conf that sets no filters, writes what the
        # job writes: nova's default filters, and ours appended.
        self.write(self.nova_conf, '[DEFAULT]\ndebug = True\n')
        self.run_phase('stack', 'post-config')
        ini = read_ini(self.nova_conf)
        self.assertEqual(
            values(ini, 'filter_scheduler', 'available_filters'),
            job.FILTER_SCHEDULER_OPTIONS['available_filters'])
        self.assertEqual(
            value(ini, 'filter_scheduler', 'enabled_filters'),
            job.FILTER_SCHEDULER_OPTIONS['enabled_filters'])
        self.assertEqual(NOVA_DEFAULT_FILTERS,
                         ','.join(job.NOVA_DEFAULT_FILTERS))

    def test_precheck_paste_agrees(self):
        # The job's api-paste.ini for its tempest phase is the one
        # devstack writes, and passes devstack's own check.
        job = self.deploy_job()
        paste = os.path.join(self.conf_dir, 'api-paste.ini')
        self.write(paste, TestPrecheckSwitch.PASTE)
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True')
        devstack = read_ini(paste)
        deployed = job.add_precheck(TestPrecheckSwitch.PASTE)
        self.write(paste, deployed)
        self.assertEqual(dict(devstack), dict(read_ini(paste)))
        self.run_phase('stack', 'extra',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True',
                       NOVA_IMAGE_TRAITS_ENABLE_HOOK='False',
                       NOVA_IMAGE_TRAITS_ENABLE_FILTER='False')

    def test_precheck_paste_needs_keystonecontext(self):
        job = self.deploy_job()
        e = self.assertRaises(
            job.Failure, job.add_precheck,
            TestPrecheckSwitch.PASTE.replace(' keystonecontext', ''))
        self.assertIn('no keystonecontext', str(e))
        e = self.assertRaises(
            job.Failure, job.add_precheck,
            TestPrecheckSwitch.PASTE.split('\n\n')[0])
        self.assertIn('openstack_compute_api_v21_legacy_v2_compatible',
                      str(e))


class TestStubs(DevstackPluginTestCase):
    """The stand-ins behave like devstack's ini functions."""

    def test_ini_functions(self):
        path = os.path.join(self.tmp, 'x.conf')
        self.write(path, '[a]\nk = 1\n\n[b]\nk = 2\n')
        out = os.path.join(self.tmp, 'out')
        self.run_bash(
            'f="%(p)s"\n'
            'iniset "$f" a k 10\n'
            'iniset "$f" c new value\n'
            'iniadd "$f" b m x\n'
            'iniadd "$f" b m y\n'
            'iniadd "$f" b m x\n'
            '{ iniget "$f" a k; iniget_multiline "$f" b m;'
            '  iniget "$f" a missing; } > "%(o)s"\n'
            'inidelete "$f" b k\n' % {'p': path, 'o': out})
        self.assertEqual(['10', 'x y x', ''],
                         self.read(out).splitlines())
        self.assertEqual(
            {'a': [('k', '10')], 'b': [('m', 'x'), ('m', 'y'), ('m', 'x')],
             'c': [('new', 'value')]},
            dict(read_ini(path)))


class TestPrecheckSwitch(DevstackPluginTestCase):
    """NOVA_IMAGE_TRAITS_ENABLE_PRECHECK edits nova's api-paste.ini."""

    PASTE = (
        '[composite:openstack_compute_api_v21]\n'
        'use = call:nova.api.auth:pipeline_factory_v21\n'
        'keystone = cors authtoken keystonecontext osapi_compute_app_v21\n'
        '\n'
        '[composite:openstack_compute_api_v21_legacy_v2_compatible]\n'
        'use = call:nova.api.auth:pipeline_factory_v21\n'
        'keystone = cors authtoken keystonecontext legacy_v2_compatible '
        'osapi_compute_app_v21\n')

    def setUp(self):
        super().setUp()
        self.paste = os.path.join(self.conf_dir, 'api-paste.ini')
        self.write(self.paste, self.PASTE)

    def test_off_by_default(self):
        self.run_phase('stack', 'post-config')
        self.assertEqual(self.PASTE, self.read(self.paste))

    def test_on_adds_the_filter_once_after_keystonecontext(self):
        for _i in range(2):
            self.run_phase('stack', 'post-config',
                           NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True')
        text = self.read(self.paste)
        self.assertEqual(2, text.count(
            ' keystonecontext image_traits_precheck '))
        self.assertEqual(1, text.count('[filter:image_traits_precheck]'))
        self.assertIn('paste.filter_factory = nova_image_traits.api.'
                      'precheck:RebuildPrecheck.factory', text)
        # nova-api reads its own nova.conf: the options are there too.
        self.assertEqual('held_providers', value(
            read_ini(self.nova_conf), 'image_traits', 'strategy'))

    def test_partial_file_is_repaired(self):
        # The definition is there, but the legacy pipeline lost its entry.
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True')
        text = self.read(self.paste).replace(
            'keystonecontext image_traits_precheck legacy_v2_compatible',
            'keystonecontext legacy_v2_compatible')
        self.write(self.paste, text)
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True')
        paste = read_ini(self.paste)
        for pipeline in ('openstack_compute_api_v21',
                         'openstack_compute_api_v21_legacy_v2_compatible'):
            self.assertIn(' keystonecontext image_traits_precheck ', value(
                paste, 'composite:' + pipeline, 'keystone'))
        self.assertEqual(1, self.read(self.paste).count(
            '[filter:image_traits_precheck]'))

    def test_extra_checks_each_pipeline(self):
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True')
        # As a local.conf that rewrites only the legacy pipeline would.
        self.run_bash(
            'iniset "%s" composite:openstack_compute_api_v21_legacy'
            '_v2_compatible keystone "cors authtoken keystonecontext '
            'legacy_v2_compatible osapi_compute_app_v21"' % self.paste)
        self.run_phase('stack', 'extra', expect_rc=1,
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True',
                       NOVA_IMAGE_TRAITS_ENABLE_HOOK='False',
                       NOVA_IMAGE_TRAITS_ENABLE_FILTER='False')
        self.assertIn('[composite:openstack_compute_api_v21_legacy_v2_'
                      'compatible] keystone', self.output)

    def test_extra_passes_with_both_pipelines(self):
        self.run_phase('stack', 'post-config',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True')
        self.run_phase('stack', 'extra',
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True',
                       NOVA_IMAGE_TRAITS_ENABLE_HOOK='False',
                       NOVA_IMAGE_TRAITS_ENABLE_FILTER='False')

    def test_extra_fails_loudly_when_the_pipeline_lost_it(self):
        self.run_phase('stack', 'extra', expect_rc=1,
                       NOVA_IMAGE_TRAITS_ENABLE_PRECHECK='True',
                       NOVA_IMAGE_TRAITS_ENABLE_HOOK='False',
                       NOVA_IMAGE_TRAITS_ENABLE_FILTER='False')
        self.assertIn('image_traits_precheck', self.output)
