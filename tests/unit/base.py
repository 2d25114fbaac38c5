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
"""A small base for the unit tests: a fresh configuration per test."""

import os

import fixtures
import hypothesis
from oslo_config import cfg
from oslotest import base

from nova_image_traits.cli import derive
from nova_image_traits import conf as nit_conf
from nova_image_traits import placement
from nova_image_traits.strategies import in_tree_candidates

# NOTE(founders): no example database, so running the tests writes nothing to
# the tree, and no per-example deadline, so a loaded CI node does not flake.
hypothesis.settings.register_profile(
    'unit', database=None, deadline=None, max_examples=150)
hypothesis.settings.load_profile('unit')


def _no_nova():
    raise ImportError("No module named 'nova'", name='nova')


class TestCase(base.BaseTestCase):
    """Gives each test ``self.conf``, a fresh ``ConfigOpts``.

    Every option of the package is registered on it and it has been parsed
    with no arguments, so ``self.flags()`` can override options.

    The commands see no nova, even where one is installed.
    """

    def setUp(self):
        super().setUp()
        # NOTE: tox -e lower-constraints runs these tests beside nova; the
        # commands' Deriver would then import it, and judge with nova's
        # code, which is tests/functional's part. Here they run as in
        # tox -e py3, which has no nova (tests/unit/test_imports.py).
        self.useFixture(fixtures.MockPatchObject(
            derive, '_boot_requirements', _no_nova))
        self.conf = cfg.ConfigOpts()
        nit_conf.register_opts(self.conf)
        self.conf([])
        self.addCleanup(self.conf.reset)
        self.addCleanup(placement.reset_clients)
        in_tree_candidates._warned.clear()
        self.addCleanup(in_tree_candidates._warned.clear)

    def flags(self, group='image_traits', **kwargs):
        """Override options of ``group`` for this test."""
        for name, value in kwargs.items():
            self.conf.set_override(name, value, group=group)


class NovaConfSearch(fixtures.Fixture):
    """oslo.config's search for nova's files sees a machine of the test's own.

    ``HOME`` is a temporary directory, and so is the ``/etc`` the search
    looks in (``/etc/nova/``, ``/etc/``), so that what a test finds does not
    depend on a machine that has its own ``/etc/nova``.

    :ivar home: the temporary home directory
    :ivar etc: the temporary directory searched instead of ``/etc``
    """

    def _setUp(self):
        self.home = self.useFixture(fixtures.TempDir()).path
        self.etc = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable('HOME', self.home))
        for name in ('SNAP', 'SNAP_COMMON'):
            self.useFixture(fixtures.EnvironmentVariable(name))
        # NOTE: the one place oslo.config names its search directories,
        # the same from 9.4.0 (lower-constraints) to 10.7.0 (2026.2).
        search = cfg._get_config_dirs

        def dirs(project=None):
            return [self.etc + d[len('/etc'):]
                    if d == '/etc' or d.startswith('/etc/') else d
                    for d in search(project)]
        self.useFixture(fixtures.MockPatchObject(cfg, '_get_config_dirs',
                                                 dirs))

    def write(self, relpath, text, root=None):
        """Write ``text`` to ``relpath`` under ``root`` (the home)."""
        path = os.path.join(root or self.home, relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
        return path
