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
"""Rebuild with image traits through the real nova, for every strategy.

Each test boots a server on a compute node with a nested child provider
(``host1`` and ``host1-child``, which holds ``CUSTOM_MAGIC``), puts the new
image's required trait somewhere, then rebuilds and checks what the user
sees: ACTIVE on the same host with the new image, or ERROR with the image
rolled back.

Two deployments are covered:

* **hook**: the conductor runs with the rebuild hook (``hook.install()``)
  and the scheduler does *not* have ``ImageTraitsFilter``; the hook
  replaces nova's own check, and the fault names the strategy;
* **filter**: nova's own conductor check runs first, then the scheduler
  runs ``ImageTraitsFilter``; a rebuild passes only if both agree.

The expected outcomes below come from each strategy's documented rule and
are written out in full, so that changing a strategy fails a test.
"""

import contextlib
import json
import logging
import os
import subprocess
import sys
import textwrap

import fixtures
from oslo_utils import uuidutils
from oslotest import base as oslo_base

from nova.conductor import manager as conductor_manager

from nova_image_traits.conductor import check as hook_check
from nova_image_traits.conductor import hook
from nova_image_traits import strategies
from tests.functional.nova import base

#: The trait the new image requires in every scenario.
TRAIT = 'HW_CPU_X86_AVX512F'

HOST = 'host1'

STRATEGIES = ('held_providers', 'reject', 'root_traits', 'tree_traits',
              'in_tree_candidates', 'allocation_traits')

#: Where the trait is, and how the server was booted. Traits are put on
#: the providers after the boot (a forbidden trait on the root would stop
#: the boot), except for ``already_required``.
SCENARIOS = {
    # The trait is on the compute node root provider.
    'root': dict(root=True),
    # The trait is only on the child, and the flavor allocates from it
    # (resources1:CUSTOM_MAGIC=1).
    'allocated_child': dict(child=True, magic=True),
    # The trait is only on the child, which the server does not use.
    'unallocated_child': dict(child=True),
    # The server uses the child (resources1:CUSTOM_MAGIC=1); the trait is
    # on a sibling of the child, added through placement, which it does
    # not hold.
    'sibling': dict(sibling=True, magic=True),
    # No provider has the trait.
    'nowhere': dict(),
    # The root has it, but the flavor says trait:<TRAIT>=forbidden.
    'forbidden': dict(root=True, forbid=True),
    # The root has it, and no VCPU is left on the host.
    'full_host': dict(root=True, full=True),
    # The root has it, and the current image already required it.
    'already_required': dict(root=True, old_image_requires=True),
}

P = 'ACTIVE'
F = 'ERROR'

#: With the conductor hook: each strategy's rule alone.
#:
#: * held_providers: on the providers serving the server's unsuffixed
#:   group (the root here; the child serves only numbered group 1);
#: * reject: only traits the current image or the flavor already required;
#: * root_traits: on the compute node root;
#: * tree_traits: anywhere in the compute node tree;
#: * in_tree_candidates: a new boot would fit, which puts image traits on
#:   the providers of the unsuffixed group (the root here); when the host is
#:   full placement cannot tell and fallback_strategy (root_traits) decides;
#: * allocation_traits: on the providers holding the server's allocations.
#:
#: A trait the flavor forbids is always refused.
EXPECTED_WITH_HOOK = {
    #                   held reject root tree in_tree alloc
    'root':              (P,  F,    P,   P,   P,      P),
    'allocated_child':   (F,  F,    F,   P,   F,      P),
    'unallocated_child': (F,  F,    F,   P,   F,      F),
    'sibling':           (F,  F,    F,   P,   F,      F),
    'nowhere':           (F,  F,    F,   F,   F,      F),
    'forbidden':         (F,  F,    F,   F,   F,      F),
    'full_host':         (P,  F,    P,   P,   P,      P),
    'already_required':  (P,  P,    P,   P,   P,      P),
}

#: Nova's own conductor check: the traits of the allocated providers.
NOVA_CHECK = {
    'root': P,
    'allocated_child': P,
    'unallocated_child': F,
    'sibling': F,
    'nowhere': F,
    'forbidden': F,
    'full_host': P,
    'already_required': P,
}

#: With the scheduler filter: nova's check first, then the strategy. The
#: filter cannot know the current image, so ``reject`` only counts the
#: flavor's traits and refuses ``already_required`` too.
EXPECTED_WITH_FILTER = {
    #                   held reject root tree in_tree alloc
    'root':              (P,  F,    P,   P,   P,      P),
    'allocated_child':   (F,  F,    F,   P,   F,      P),
    'unallocated_child': (F,  F,    F,   F,   F,      F),
    'sibling':           (F,  F,    F,   F,   F,      F),
    'nowhere':           (F,  F,    F,   F,   F,      F),
    'forbidden':         (F,  F,    F,   F,   F,      F),
    'full_host':         (P,  F,    P,   P,   P,      P),
    'already_required':  (P,  F,    P,   P,   P,      P),
}

#: Cases where our check refuses although nova's check would pass, or the
#: reverse: the proof that the hook, not nova, decided.
_HOOK_DIFFERS_FROM_NOVA = sorted(
    (scenario, strategy)
    for scenario, row in EXPECTED_WITH_HOOK.items()
    for strategy, outcome in zip(STRATEGIES, row)
    if outcome != NOVA_CHECK[scenario])


def expected(table, scenario, strategy):
    return table[scenario][STRATEGIES.index(strategy)]


class _RebuildMatrixBase(base.ImageTraitsTestBase):

    #: The table of expected outcomes for this deployment.
    EXPECTED = None

    def setUp(self):
        super().setUp()
        self.root, self.child = self.start_nested_compute(HOST)

    def _run_scenario(self, scenario, strategy):
        spec = SCENARIOS[scenario]
        self.set_image_traits_opts(strategy=strategy)

        extra_specs = {}
        if spec.get('magic'):
            extra_specs['resources1:%s' % base.CHILD_RESOURCE] = '1'
        if spec.get('forbid'):
            extra_specs['trait:%s' % TRAIT] = 'forbidden'
        flavor = self.create_flavor(extra_specs or None)

        if spec.get('old_image_requires'):
            self.set_traits(self.root, [TRAIT])
            old_image = self.create_image(required=[TRAIT])
        else:
            old_image = self.create_image()
        new_image = self.create_image(required=[TRAIT])

        server = self.boot(flavor, old_image)
        self.assertEqual(HOST, server['OS-EXT-SRV-ATTR:host'])
        allocations = self._get_allocations_by_server_uuid(server['id'])
        if spec.get('magic'):
            self.assertEqual({self.root, self.child}, set(allocations))
        else:
            self.assertEqual({self.root}, set(allocations))

        if spec.get('root'):
            self.set_traits(self.root, [TRAIT])
        if spec.get('child'):
            self.set_traits(self.child, [TRAIT])
        if spec.get('sibling'):
            self.set_traits(self.add_sibling(), [TRAIT])
        if spec.get('full'):
            self.fill_host(self.root)

        server = self.rebuild(server, new_image)

        want = expected(self.EXPECTED, scenario, strategy)
        self.assertEqual(want, server['status'],
                         'scenario %s, strategy %s: %s' % (
                             scenario, strategy,
                             self.fault_message(server)))
        self.assertEqual(HOST, server['OS-EXT-SRV-ATTR:host'])
        if want == P:
            self.assertEqual(new_image, server['image']['id'])
            self.assertNotIn('fault', server)
        else:
            # Nova rolls image_ref back when the check refuses.
            self.assertEqual(old_image, server['image']['id'])
            self.assertIn('No valid host', self.fault_message(server))
            self._check_refusal(server, scenario, strategy)
        # The server keeps its allocations either way.
        self.assertEqual(set(allocations),
                         set(self._get_allocations_by_server_uuid(
                             server['id'])))
        return server

    def _check_refusal(self, server, scenario, strategy):
        pass


def _make_test(scenario, strategy):
    def test(self):
        self._run_scenario(scenario, strategy)
    test.__name__ = 'test_%s_%s' % (strategy, scenario)
    test.__doc__ = 'Rebuild, trait %s, strategy %s.' % (scenario, strategy)
    return test


def _add_matrix(cls):
    for scenario in SCENARIOS:
        for strategy in STRATEGIES:
            test = _make_test(scenario, strategy)
            setattr(cls, test.__name__, test)
    return cls


@_add_matrix
class RebuildWithConductorHookTest(_RebuildMatrixBase):
    """Only the conductor is configured: hook installed, no filter."""

    EXPECTED = EXPECTED_WITH_HOOK
    ENABLE_IMAGE_TRAITS_FILTER = False

    def setUp(self):
        super().setUp()
        names = [type(f).__name__ for f in
                 self.scheduler_service.manager.host_manager.enabled_filters]
        self.assertNotIn(base.FILTER_NAME, names)
        hook.install()
        self.addCleanup(hook.uninstall)

    def _check_refusal(self, server, scenario, strategy):
        # Everyone who sees the server reads a message that names nothing
        # of the host; an admin reads the reason in the fault's details.
        # A trait the flavor forbids is what the flavor says: all read it.
        if scenario == 'forbidden':
            self.assertIn(TRAIT, self.fault_message(server))
        else:
            self.assertNotIn(TRAIT, self.fault_message(server))
        message = self.fault_reason(server)
        # The admin sees the missing trait first, then what was judged, and
        # the whole reason survives nova's 255-character fault column.
        self.assertTrue(message.startswith(
            'No valid host was found. %s: ' % TRAIT), message)
        self.assertTrue(message.endswith('.'), message)
        self.assertLess(len(message), 255)
        if scenario == 'forbidden':
            self.assertIn("forbidden by the server's flavor", message)
        else:
            self.assertIn(strategies.load(strategy).lacks, message)
        # The strategy's name is for operators (the decision log line).
        self.assertNotIn(strategy, message)


@_add_matrix
class RebuildWithSchedulerFilterTest(_RebuildMatrixBase):
    """Nova's own conductor check plus ImageTraitsFilter in the scheduler."""

    EXPECTED = EXPECTED_WITH_FILTER
    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        self.assertFalse(hook.is_installed())


class ExpectationsTest(oslo_base.BaseTestCase):
    """The tables are consistent with each other."""

    def test_filter_is_nova_check_and_strategy(self):
        for scenario in SCENARIOS:
            for strategy in STRATEGIES:
                hooked = expected(EXPECTED_WITH_HOOK, scenario, strategy)
                if strategy == 'reject':
                    # The filter does not know the current image.
                    hooked = F
                want = P if (NOVA_CHECK[scenario] == P and hooked == P) else F
                self.assertEqual(
                    want, expected(EXPECTED_WITH_FILTER, scenario, strategy),
                    (scenario, strategy))

    def test_hook_differs_from_nova(self):
        # The hook tests would prove nothing if every outcome matched
        # nova's own check.
        self.assertIn(('unallocated_child', 'tree_traits'),
                      _HOOK_DIFFERS_FROM_NOVA)
        self.assertIn(('allocated_child', 'root_traits'),
                      _HOOK_DIFFERS_FROM_NOVA)
        self.assertIn(('allocated_child', 'held_providers'),
                      _HOOK_DIFFERS_FROM_NOVA)


_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

# Run in a fresh interpreter, as the console script would: import the
# launcher, then let it install the hook and call nova's main(), which is
# replaced by a probe instead of starting a real conductor.
# NOTE(founders): the launcher cannot be imported in the test process at all:
# its first import, nova.cmd.conductor, picks native threading and raises
# RuntimeError when eventlet is already imported (nova/monkey_patch.py).
_LAUNCHER_PROBE = textwrap.dedent('''
    import json
    import sys

    from nova_image_traits.cmd import conductor as launcher
    from nova.cmd import conductor as nova_conductor
    from nova.conductor import manager

    called = []

    nova_check = manager.ComputeTaskManager.__dict__[
        '_validate_image_traits_for_rebuild']

    def probe():
        from nova_image_traits.conductor import check as hook_check
        from nova_image_traits.conductor import hook
        cls = manager.ComputeTaskManager
        check = cls.__dict__.get('_validate_image_traits_for_rebuild')
        called.append({
            'ours': (getattr(check, '__wrapped__', None) is
                     hook_check.validate_image_traits_for_rebuild),
            'installed': hook.is_installed(),
            'filter_imported': (
                'nova_image_traits.filters.image_traits_filter'
                in sys.modules),
            'nova_check': check is nova_check,
        })
        return 0

    def probe_logging(log_file):
        # What nova's main() does first: parse the configuration, then set
        # up logging, which writes to log_file.
        nova_conductor.config.parse_args(
            ['nova-conductor', '--log-file', log_file])
        nova_conductor.logging.setup(nova_conductor.CONF, 'nova')
        called.append({'log_file': log_file})
        return 0

    if 'break-nova' in sys.argv:
        sys.argv.remove('break-nova')
        del manager.ComputeTaskManager._validate_image_traits_for_rebuild
    if 'break-rebuild' in sys.argv:
        # A nova whose rebuild_instance no longer calls the check.
        sys.argv.remove('break-rebuild')

        def rebuild_instance(self, context, instance, orig_image_ref,
                             image_ref, orig_sys_metadata, bdms,
                             request_spec):
            pass
        manager.ComputeTaskManager.rebuild_instance = rebuild_instance
    if sys.argv[1:2] == ['log-file']:
        nova_conductor.main = lambda: probe_logging(sys.argv[2])
    else:
        nova_conductor.main = probe
    rc = launcher.main()
    print(json.dumps({'rc': rc, 'called': called}))
''')


class ConductorActivationTest(oslo_base.BaseTestCase):
    """The hook is activated by the conductor launcher, in its process."""

    def _run_launcher(self, *args):
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join(
            [_REPO_ROOT] + [p for p in [env.get('PYTHONPATH')] if p])
        proc = subprocess.run(
            [sys.executable, '-c', _LAUNCHER_PROBE] + list(args),
            cwd=_REPO_ROOT, env=env, capture_output=True, text=True,
            timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr

    def test_launcher_installs_hook_in_its_own_process(self):
        result, _stderr = self._run_launcher()
        # Only the conductor launcher ran: the scheduler filter module was
        # never imported, yet nova's check is ours.
        self.assertEqual({'rc': 0, 'called': [
            {'ours': True, 'installed': True, 'filter_imported': False,
             'nova_check': False}]},
            result)

    def test_installed_line_reaches_the_conductor_log(self):
        # The hook is installed before nova sets up logging; the launcher
        # logs the line once nova's logging.setup has run, so it is in the
        # log file an operator reads.
        log_file = os.path.join(self.useFixture(
            fixtures.TempDir()).path, 'conductor.log')
        result, _stderr = self._run_launcher('log-file', log_file)
        self.assertEqual({'rc': 0, 'called': [{'log_file': log_file}]},
                         result)
        with open(log_file) as f:
            lines = [line for line in f
                     if 'nova-image-traits rebuild hook installed' in line]
        self.assertEqual(1, len(lines), lines)
        self.assertIn(' INFO nova_image_traits.conductor.hook ', lines[0])

    def _conf_file(self, value):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'nova.conf')
        with open(path, 'w') as f:
            f.write('[image_traits]\nhook_on_unsupported_nova = %s\n'
                    % value)
        return path

    def test_launcher_runs_nova_check_on_unknown_nova(self):
        # The default: the conductor starts, nova's own check untouched,
        # one CRITICAL line.
        for args in (('break-rebuild',),
                     ('break-rebuild', '--config-file',
                      self._conf_file('run_nova_check'))):
            result, stderr = self._run_launcher(*args)
            self.assertEqual({'rc': 0, 'called': [
                {'ours': False, 'installed': False, 'filter_imported': False,
                 'nova_check': True}]}, result)
            self.assertEqual(1, stderr.count('no longer calls'), stderr)
            self.assertIn("nova's own image traits check", stderr)
        result, stderr = self._run_launcher('break-nova')
        self.assertEqual(0, result['rc'])
        self.assertIn('_validate_image_traits_for_rebuild does not exist',
                      stderr)

    def test_launcher_refuses_to_start_when_configured(self):
        conf = self._conf_file('refuse_to_start')
        for args in (('break-nova', '--config-file', conf),
                     ('break-rebuild', '--config-file=%s' % conf)):
            result, stderr = self._run_launcher(*args)
            self.assertEqual({'rc': 1, 'called': []}, result)
            self.assertIn('nova-image-traits-conductor: Cannot install',
                          stderr)
        # A supported nova starts with the hook whatever the option.
        result, _stderr = self._run_launcher('--config-file', conf)
        self.assertEqual(0, result['rc'])
        self.assertTrue(result['called'][0]['installed'])


class HookInstallTest(oslo_base.BaseTestCase):
    """install() checks nova's internals and is reversible."""

    def setUp(self):
        super().setUp()
        hook.uninstall()
        self.addCleanup(hook.uninstall)
        self.cls = conductor_manager.ComputeTaskManager
        self.validate = self.cls.__dict__['_validate_image_traits_for_rebuild']
        self.rebuild = self.cls.__dict__['rebuild_instance']

    def _replace(self, name, value=None):
        """Replace or delete a ComputeTaskManager method for this test."""
        self.addCleanup(setattr, self.cls, name, self.cls.__dict__[name])
        if value is None:
            delattr(self.cls, name)
        else:
            setattr(self.cls, name, value)

    def _assert_untouched(self):
        self.assertFalse(hook.is_installed())
        self.assertIs(self.rebuild, self.cls.__dict__['rebuild_instance'])

    def test_install_is_idempotent_and_reversible(self):
        hook.install()
        hook.install()
        self.assertTrue(hook.is_installed())
        check = self.cls._validate_image_traits_for_rebuild
        self.assertIs(hook_check.validate_image_traits_for_rebuild,
                      check.__wrapped__)
        self.assertIsNot(self.rebuild, self.cls.__dict__['rebuild_instance'])
        hook.uninstall()
        hook.uninstall()
        self.assertFalse(hook.is_installed())
        self.assertIs(self.validate,
                      self.cls.__dict__['_validate_image_traits_for_rebuild'])
        self.assertIs(self.rebuild, self.cls.__dict__['rebuild_instance'])

    def test_install_fails_when_check_is_gone(self):
        self._replace('_validate_image_traits_for_rebuild')
        e = self.assertRaises(hook.HookInstallError, hook.install)
        self.assertIn('ComputeTaskManager._validate_image_traits_for_rebuild',
                      str(e))
        self.assertIn('does not exist', str(e))
        self.assertIn('supports nova 31 to 34 (2025.1, 2025.2, 2026.1, '
                      '2026.2)', str(e))
        self._assert_untouched()

    def test_install_fails_when_check_signature_changed(self):
        def _validate_image_traits_for_rebuild(self, context, instance,
                                               image_ref, request_spec):
            pass
        self._replace('_validate_image_traits_for_rebuild',
                      _validate_image_traits_for_rebuild)
        e = self.assertRaises(hook.HookInstallError, hook.install)
        self.assertIn('expected parameters', str(e))
        self._assert_untouched()

    def test_install_fails_when_refusal_handler_changed(self):
        # The hook restores a refused server in this step of nova's handler.
        name = '_set_vm_state_and_notify'
        self.addCleanup(setattr, self.cls, name, self.cls.__dict__[name])
        delattr(self.cls, name)
        e = self.assertRaises(hook.HookInstallError, hook.install)
        self.assertIn('ComputeTaskManager._set_vm_state_and_notify does not '
                      'exist', str(e))
        self._assert_untouched()

        def _set_vm_state_and_notify(self, context, instance_uuid, method,
                                     updates, ex):
            pass
        setattr(self.cls, name, _set_vm_state_and_notify)
        e = self.assertRaises(hook.HookInstallError, hook.install)
        self.assertIn('expected parameters', str(e))
        self._assert_untouched()

    def test_install_fails_when_rebuild_has_no_bdms(self):
        # The hook tells a volume-backed server by the BDMs nova's API
        # passed, as the API told it.
        def rebuild_instance(self, context, instance, orig_image_ref,
                             image_ref, injected_files, new_pass,
                             orig_sys_metadata, recreate,
                             on_shared_storage, preserve_ephemeral=False,
                             host=None, request_spec=None):
            self._validate_image_traits_for_rebuild()
        self._replace('rebuild_instance', rebuild_instance)
        e = self.assertRaises(hook.HookInstallError, hook.install)
        self.assertIn('rebuild_instance lacks the parameters bdms', str(e))
        self.assertFalse(hook.is_installed())

    def test_install_fails_when_rebuild_no_longer_calls_check(self):
        def rebuild_instance(self, context, instance, orig_image_ref,
                             image_ref, injected_files, new_pass,
                             orig_sys_metadata, bdms, recreate,
                             on_shared_storage, preserve_ephemeral=False,
                             host=None, request_spec=None):
            pass
        self._replace('rebuild_instance', rebuild_instance)
        e = self.assertRaises(hook.HookInstallError, hook.install)
        self.assertIn('no longer calls', str(e))
        self.assertFalse(hook.is_installed())


class _FailureHandlingBase(base.ImageTraitsTestBase):
    """An unexpected error never leaves a server stuck in REBUILDING."""

    def setUp(self):
        super().setUp()
        self.root, self.child = self.start_nested_compute(HOST)
        self.flavor = self.create_flavor()
        self.old_image = self.create_image()
        self.new_image = self.create_image(required=[TRAIT])
        self.set_traits(self.root, [TRAIT])

    def _break_engine(self):
        return self.useFixture(fixtures.MockPatch(
            'nova_image_traits.engine.decide',
            side_effect=RuntimeError('boom'))).mock

    def _rebuild(self):
        server = self.boot(self.flavor, self.old_image)
        return self.rebuild(server, self.new_image)


class HookFailureHandlingTest(_FailureHandlingBase):

    def test_hook_fails_closed(self):
        hook.install()
        self.addCleanup(hook.uninstall)
        decide = self._break_engine()
        server = self._rebuild()
        decide.assert_called_once()
        self.assertEqual('ERROR', server['status'])
        self.assertEqual(self.old_image, server['image']['id'])
        self.assertIn('internal error', self.fault_message(server))
        self.assertNotIn('boom', self.fault_message(server))

    def test_hook_fails_open_when_configured(self):
        self.set_image_traits_opts(on_placement_error='accept')
        hook.install()
        self.addCleanup(hook.uninstall)
        decide = self._break_engine()
        server = self._rebuild()
        decide.assert_called_once()
        self.assertEqual('ACTIVE', server['status'])
        self.assertEqual(self.new_image, server['image']['id'])

    def test_check_without_the_rebuild_arguments_fails_closed(self):
        # As if nova called the check from somewhere the hook does not wrap.
        hook.install()
        self.addCleanup(hook.uninstall)
        self.useFixture(fixtures.MockPatchObject(
            hook_check, 'remember',
            lambda arguments: contextlib.nullcontext()))
        decide = self.useFixture(fixtures.MockPatch(
            'nova_image_traits.engine.decide')).mock
        server = self._rebuild()
        decide.assert_not_called()
        self.assertEqual('ERROR', server['status'])
        self.assertEqual(self.old_image, server['image']['id'])
        self.assertIn('internal error', self.fault_message(server))


class FilterFailureHandlingTest(_FailureHandlingBase):

    ENABLE_IMAGE_TRAITS_FILTER = True

    def test_filter_fails_closed(self):
        decide = self._break_engine()
        server = self._rebuild()
        decide.assert_called_once()
        self.assertEqual('ERROR', server['status'])
        self.assertEqual(self.old_image, server['image']['id'])
        self.assertIn('No valid host', self.fault_message(server))

    def test_filter_fails_open_when_configured(self):
        self.set_image_traits_opts(on_placement_error='accept')
        decide = self._break_engine()
        server = self._rebuild()
        decide.assert_called_once()
        self.assertEqual('ACTIVE', server['status'])

    def test_filter_does_nothing_at_boot(self):
        # Any call into the engine (or placement through it) at boot would
        # fail this test: the filter passes non-rebuild requests untouched.
        decide = self._break_engine()
        self.boot(self.flavor, self.new_image)
        decide.assert_not_called()


class FilterLoadingTest(oslo_base.BaseTestCase):
    """The filter loads the ways a deployer can name it."""

    def test_available_filters_class_path(self):
        from nova.scheduler import filters as nova_filters
        from nova_image_traits.filters import image_traits_filter

        classes = nova_filters.HostFilterHandler().get_matching_classes(
            ['nova.scheduler.filters.all_filters', base.FILTER_PATH])
        ours = [c for c in classes if c.__name__ == base.FILTER_NAME]
        self.assertEqual([image_traits_filter.ImageTraitsFilter], ours)
        self.assertTrue(ours[0].RUN_ON_REBUILD)

    def test_entry_point_in_setup_cfg(self):
        import configparser
        import importlib.metadata

        from nova_image_traits.filters import image_traits_filter

        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(_REPO_ROOT, 'setup.cfg'))
        lines = [line.strip() for line in
                 cfg['entry_points']['nova.scheduler.filters'].splitlines()
                 if line.strip()]
        self.assertEqual(1, len(lines))
        name, value = [part.strip() for part in lines[0].split('=', 1)]
        self.assertEqual(base.FILTER_NAME, name)
        entry_point = importlib.metadata.EntryPoint(
            name, value, 'nova.scheduler.filters')
        self.assertIs(image_traits_filter.ImageTraitsFilter,
                      entry_point.load())


class FilterUnitTest(oslo_base.BaseTestCase):
    """The filter's contract with nova's filter handler."""

    def setUp(self):
        super().setUp()
        from nova import objects
        from nova.tests.unit.scheduler import fakes

        from nova_image_traits.filters import image_traits_filter

        objects.register_all()
        self.filter = image_traits_filter.ImageTraitsFilter()
        self.hosts = [fakes.FakeHostState('host%d' % i, 'node', {})
                      for i in range(3)]
        self.decide = self.useFixture(fixtures.MockPatch(
            'nova_image_traits.engine.decide',
            side_effect=AssertionError('no decision expected'))).mock
        self.objects = objects

    def test_filter_all_returns_hosts_untouched_unless_rebuild(self):
        spec = self.objects.RequestSpec(scheduler_hints={})
        self.assertIs(self.hosts, self.filter.filter_all(self.hosts, spec))
        self.assertTrue(self.filter.host_passes(self.hosts[0], spec))
        self.decide.assert_not_called()

    def test_filter_all_checks_hosts_on_rebuild(self):
        self.decide.side_effect = None
        self.decide.return_value.allowed = False
        spec = self._rebuild_spec(force_hosts=['host0'],
                                  force_nodes=['node'])
        self.assertEqual([], list(self.filter.filter_all(self.hosts[:1],
                                                         spec)))
        request = self.decide.call_args[0][0]
        self.assertEqual({'trait:%s' % TRAIT: 'required'},
                         request.image_properties)
        self.assertIsNone(request.original_image_properties)
        self.assertEqual(self.hosts[0].uuid, request.compute_node_uuid)

    INSTANCE = '2f5ad4c2-0bbb-4a61-9a53-1c62e1a0ef36'

    def _rebuild_spec(self, traits=(TRAIT,), **fields):
        image = self.objects.ImageMeta.from_dict(
            {'properties': {'trait:%s' % t: 'required' for t in traits}})
        flavor = self.objects.Flavor(
            vcpus=1, memory_mb=512, root_gb=1, ephemeral_gb=0, swap=0,
            extra_specs={}, name='f')
        return self.objects.RequestSpec(
            scheduler_hints={'_nova_check_type': ['rebuild']},
            instance_uuid=self.INSTANCE, image=image, flavor=flavor,
            is_bfv=False, **fields)

    def test_forged_rebuild_hint_on_200_hosts_makes_no_decision(self):
        from nova.tests.unit.scheduler import fakes
        hosts = [fakes.FakeHostState('host%d' % i, 'node', {})
                 for i in range(200)]
        for traits, expected in (((TRAIT,), []), ((), hosts)):
            log = self.useFixture(fixtures.FakeLogger(
                name='nova_image_traits', level=logging.WARNING))
            spec = self._rebuild_spec(traits=traits)
            self.assertEqual(expected,
                             list(self.filter.filter_all(hosts, spec)))
            warnings = [line for line in log.output.splitlines()
                        if 'rebuild scheduler hint' in line]
            self.assertEqual(1, len(warnings), log.output)
            self.assertIn('200 candidate hosts', warnings[0])
        self.decide.assert_not_called()

    def test_rebuild_hint_on_a_host_not_forced(self):
        from nova.tests.unit.scheduler import fakes
        # A host that is not the forced one, two hosts, or another node:
        # not a rebuild nova's API made.
        for hosts, fields in (
                (self.hosts[:1], {'force_hosts': ['host9']}),
                (self.hosts[:2], {'force_hosts': ['host0']}),
                (self.hosts[:1], {'force_hosts': ['host0'],
                                  'force_nodes': ['node9']})):
            spec = self._rebuild_spec(**fields)
            self.assertEqual([], list(self.filter.filter_all(hosts, spec)))
        self.decide.assert_not_called()
        # The scheduler's instances of the host do not decide: after a live
        # migration they lack the server until the next sync.
        self.decide.side_effect = None
        self.decide.return_value.allowed = True
        other = self.objects.Instance(
            uuid='6c2cc1cc-2ad9-4bcb-9f2a-3c3c3fd5ee9d')
        mine = self.objects.Instance(uuid=self.INSTANCE)
        for instances in ([other], [other, mine], []):
            host = fakes.FakeHostState('host0', 'node', {},
                                       instances=instances)
            spec = self._rebuild_spec(force_hosts=['host0'],
                                      force_nodes=['node'])
            self.assertEqual([host],
                             list(self.filter.filter_all([host], spec)))
        self.assertEqual(3, self.decide.call_count)

    def test_global_request_id_is_passed(self):
        from nova import context as nova_context
        self.decide.side_effect = None
        self.decide.return_value.allowed = True
        ctx = nova_context.RequestContext(
            'user', 'project', is_admin=True,
            global_request_id='req-%s' % self.INSTANCE)
        spec = self._rebuild_spec(force_hosts=['host0'])
        spec._context = ctx
        list(self.filter.filter_all(self.hosts[:1], spec))
        request = self.decide.call_args[0][0]
        self.assertEqual('req-%s' % self.INSTANCE, request.global_request_id)


class RefusedRebuildRetryTest(base.ImageTraitsTestBase):
    """A refused rebuild leaves the new image's properties behind.

    Nova's API writes the new image's properties into the instance's system
    metadata before the conductor checks anything, and a refusal only rolls
    ``image_ref`` back (nova/compute/api.py ``_reset_image_metadata``,
    nova/conductor/manager.py ``rebuild_instance``). The next rebuild's
    ``orig_sys_metadata`` then describes the refused image, not the current
    one; trusting it would let the ``reject`` strategy accept the very
    rebuild it just refused.
    """

    def setUp(self):
        super().setUp()
        self.root, _child = self.start_nested_compute(HOST)
        hook.install()
        self.addCleanup(hook.uninstall)
        self.set_image_traits_opts(strategy='reject')

    def test_retry_is_refused_again(self):
        flavor = self.create_flavor()
        old_image = self.create_image()
        new_image = self.create_image(required=[TRAIT])
        self.set_traits(self.root, [TRAIT])
        server = self.boot(flavor, old_image)

        for attempt in range(2):
            server = self.rebuild(server, new_image)
            self.assertEqual('ERROR', server['status'], attempt)
            self.assertEqual(old_image, server['image']['id'])
            self.assertIn(TRAIT, self.fault_reason(server))
            self.assertIn('not required when this server was created',
                          self.fault_reason(server))


class NovaRequestTest(oslo_base.BaseTestCase):
    """How image traits are read back from nova's objects."""

    def test_system_metadata_keeps_required_traits_only(self):
        from nova import utils as nova_utils

        from nova_image_traits import nova_request

        image = {'id': 'img-a', 'min_ram': 0, 'properties': {
            'trait:HW_CPU_X86_AVX2': 'required',
            'trait:HW_CPU_X86_SGX': 'forbidden',
            'hw_disk_bus': 'virtio'}}
        sys_meta = nova_utils.get_system_metadata_from_image(image)
        # This is how nova stores them.
        self.assertEqual('required', sys_meta['image_trait:HW_CPU_X86_AVX2'])
        self.assertEqual(
            {'trait:HW_CPU_X86_AVX2': 'required'},
            nova_request.image_properties_from_system_metadata(sys_meta))
        self.assertIsNone(
            nova_request.image_properties_from_system_metadata(None))

    def test_system_metadata_of_another_image(self):
        from nova_image_traits import nova_request

        glance = self.useFixture(fixtures.MockPatch(
            'nova.image.glance.API.get')).mock
        trusted = nova_request.trusted_system_metadata
        sys_meta = {'image_base_image_ref': 'img-a',
                    'image_trait:CUSTOM_A': 'required'}
        self.assertIs(sys_meta, trusted('ctx', sys_meta, 'img-a'))
        self.assertIs(sys_meta, trusted('ctx', sys_meta, None))
        self.assertIsNone(trusted('ctx', None, 'img-a'))
        glance.assert_not_called()
        # Booted from snapshot img-s of a server that ran img-a.
        glance.return_value = {'id': 'img-s', 'properties': {
            'base_image_ref': 'img-a', 'trait:CUSTOM_A': 'required'}}
        self.assertIs(sys_meta, trusted('ctx', sys_meta, 'img-s'))
        glance.assert_called_once_with('ctx', 'img-s')
        # Left behind by a refused rebuild to img-a of a server on img-b.
        glance.return_value = {'id': 'img-b', 'properties': {}}
        self.assertIsNone(trusted('ctx', sys_meta, 'img-b'))
        # Glance is not asked when the strategy does not need it, and an
        # image Glance cannot give stays unknown.
        glance.reset_mock()
        self.assertIsNone(trusted('ctx', sys_meta, 'img-s',
                                  ask_glance=False))
        glance.assert_not_called()
        glance.side_effect = Exception('Image img-s could not be found.')
        self.assertIsNone(trusted('ctx', sys_meta, 'img-s'))

    def test_system_metadata_with_values_nova_now_refuses(self):
        from nova_image_traits import nova_request

        # Stored by an older nova; ImageMeta.from_dict raises on both.
        sys_meta = {'image_base_image_ref': 'img-a',
                    'image_hw_disk_bus': 'no-such-bus',
                    'image_min_ram': 'abc',
                    'image_trait:CUSTOM_A': 'required'}
        self.assertEqual(
            {'trait:CUSTOM_A': 'required'},
            nova_request.image_properties_from_system_metadata(sys_meta))


class ForgedSchedulerHintTest(base.ImageTraitsTestBase):
    """A scheduler hint forged at create time cannot weaken the check.

    Nova's API overwrites ``_nova_check_type`` with ``['rebuild']`` on every
    rebuild with a new image (nova/compute/api.py ``API.rebuild``), and the
    filter acts on that marker alone; the hint a user gave at boot is
    stored in the request spec but never reaches the rebuild decision.
    """

    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        self.root, self.child = self.start_nested_compute(HOST)
        # root_traits refuses a trait that only the allocated child has,
        # which nova's own check accepts: only our filter can refuse it.
        self.set_image_traits_opts(strategy='root_traits')

    def _boot_with_hints(self, flavor, image, hints):
        server = self._build_server(image_uuid=image, flavor_id=flavor,
                                    networks='none')
        server = self.api.post_server({'server': server,
                                       'os:scheduler_hints': hints})
        server = self.wait_until_settled(server)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        return server

    def test_forged_rebuild_hint_at_boot_is_dropped_by_nova(self):
        # nova 34's API drops every _nova* hint at create
        # (nova/compute/api.py _validate_and_build_base_options), so the
        # boot is scheduled through placement, which refuses the image
        # trait, and the filter is not asked. Requests that reach the
        # scheduler marked as a rebuild some other way are covered by
        # FilterUnitTest.test_forged_rebuild_hint_on_200_hosts_*.
        self._start_compute('host2')
        spy = self.useFixture(fixtures.MockPatch(
            'nova_image_traits.engine.decide',
            side_effect=AssertionError('no decision expected'))).mock
        flavor = self.create_flavor()
        image = self.create_image(required=[TRAIT])
        server = self._build_server(image_uuid=image, flavor_id=flavor,
                                    networks='none')
        server = self.api.post_server({
            'server': server,
            'os:scheduler_hints': {'_nova_check_type': ['rebuild']}})
        server = self.wait_until_settled(server)
        self.assertEqual('ERROR', server['status'])
        self.assertIn('No valid host', self.fault_message(server))
        spy.assert_not_called()

    def test_forged_check_type_at_create_does_not_skip_the_filter(self):
        flavor = self.create_flavor(
            {'resources1:%s' % base.CHILD_RESOURCE: '1'})
        old_image = self.create_image()
        new_image = self.create_image(required=[TRAIT])
        for hints in ({'_nova_check_type': ['build']},
                      {'_nova_check_type': 'none'}):
            server = self._boot_with_hints(flavor, old_image, hints)
            self.set_traits(self.child, [TRAIT])
            server = self.rebuild(server, new_image)
            self.assertEqual('ERROR', server['status'], hints)
            self.assertEqual(old_image, server['image']['id'])
            self._delete_server(server)


class GlobalRequestIdTest(base.ImageTraitsTestBase):
    """The nova request's global id reaches our placement requests."""

    ENABLE_IMAGE_TRAITS_FILTER = True

    def setUp(self):
        super().setUp()
        from nova_image_traits import placement as nit_placement
        self.root, _child = self.start_nested_compute(HOST)
        self.contexts = []
        check = hook_check.validate_image_traits_for_rebuild

        def record(manager, context, instance, image_ref):
            self.contexts.append(context.global_id)
            return check(manager, context, instance, image_ref)
        self.useFixture(fixtures.MockPatchObject(
            hook_check, 'validate_image_traits_for_rebuild', record))
        hook.install()
        self.addCleanup(hook.uninstall)
        self.set_image_traits_opts(strategy='root_traits')
        self.sent = []
        original = nit_placement.PlacementClient.request

        def spy(client, url, version, deadline, limit,
                global_request_id=None):
            self.sent.append((url, global_request_id))
            return original(client, url, version, deadline, limit,
                            global_request_id)
        self.useFixture(fixtures.MockPatchObject(
            nit_placement.PlacementClient, 'request', spy))

    def test_filter_and_hook_send_the_global_request_id(self):
        flavor = self.create_flavor()
        server = self.boot(flavor, self.create_image())
        self.set_traits(self.root, [TRAIT])
        gid = 'req-%s' % uuidutils.generate_uuid()
        resp = self.api.api_post(
            '/servers/%s/action' % server['id'], {'rebuild': {
                'imageRef': self.create_image(required=[TRAIT])}},
            headers={'X-OpenStack-Request-ID': gid})
        server = self.wait_until_settled(server)
        self.assertEqual('ACTIVE', server['status'],
                         self.fault_message(server))
        self.assertEqual(202, resp.status)
        # One decision in the scheduler filter, one in the conductor hook,
        # both carrying the global_id of the rebuild's request context
        # (the caller's X-OpenStack-Request-ID when nova's auth middleware
        # keeps it, which noauth2 does not, else the context's own id).
        self.assertEqual(1, len(self.contexts))
        self.assertTrue(self.contexts[0].startswith('req-'))
        self.assertEqual(2, len(self.sent), self.sent)
        self.assertEqual({self.contexts[0]}, {g for _url, g in self.sent})
