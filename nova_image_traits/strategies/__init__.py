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
"""Rebuild strategies, loaded as stevedore plugins.

Each strategy is a class registered in the entry point namespace
:data:`NAMESPACE`. Its docstring states the rule it applies.
"""

from stevedore import driver
from stevedore import exception as stevedore_exc

from nova_image_traits import exception

NAMESPACE = 'nova_image_traits.strategies'

_CACHE = {}


def load(name, option='strategy'):
    """Return the strategy plugin ``name``, loaded once per process.

    :param name: an entry point name in :data:`NAMESPACE`
    :param option: the configuration option that named it, for the error
    :raises: StrategyNotFound, naming the bad value
    """
    strategy = _CACHE.get(name)
    if strategy is not None:
        return strategy

    def fail(why):
        return exception.StrategyNotFound(
            name=name, namespace=NAMESPACE, option=option,
            why='%s: %s' % (type(why).__name__, why))

    def load_failed(manager, entrypoint, exc):
        # A plugin that fails to import or to build.
        raise fail(exc)

    try:
        strategy = driver.DriverManager(
            NAMESPACE, name, invoke_on_load=True,
            on_load_failure_callback=load_failed).driver
    except stevedore_exc.NoUniqueMatch as e:
        # No plugin of that name, or two.
        raise fail(e)
    _CACHE[name] = strategy
    return strategy
