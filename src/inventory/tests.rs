//! Inventory reading: Ansible YAML and INI, variables' precedence, ranges, `--limit`,
//! and values that must never reach an `ssh_config`.

use super::*;

const YAML: &str = "\
all:
  vars:
    ansible_user: admin
    port: 2222
  hosts:
    login1:
      ansible_host: 10.0.0.2
  children:
    gpu:
      vars:
        ansible_user: root
        python: /opt/ml-env/bin/python3
      hosts:
        node[00:02]:
        special:
          ansible_port: 22
          HF_HOME: /data/hf
      children:
        rack1:
          hosts:
            node01:
";

#[test]
fn reads_ansible_yaml_with_precedence_and_ranges() {
    let inventory = parse(YAML, "inv.yml").unwrap();
    let names: Vec<&str> = inventory.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["login1", "node00", "node01", "node02", "special"]);
    let login = &inventory.hosts[0];
    assert_eq!(login.address.as_deref(), Some("10.0.0.2"));
    assert_eq!(login.user.as_deref(), Some("admin"));
    assert_eq!(login.port, Some(2222));
    assert_eq!(login.python, None);
    let special = &inventory.hosts[4];
    assert_eq!(
        special.user.as_deref(),
        Some("root"),
        "group vars override all's"
    );
    assert_eq!(special.port, Some(22), "host vars override groups'");
    assert_eq!(
        special.python.as_deref(),
        Some(Path::new("/opt/ml-env/bin/python3"))
    );
    assert_eq!(special.vars["HF_HOME"], "/data/hf");
    assert!(inventory.groups["rack1"].contains("node01"));
    assert!(
        inventory.groups["gpu"].contains("node01"),
        "children are members"
    );
    assert!(inventory.hosts[2].groups.contains("rack1"));
    assert_eq!(inventory.groups["ungrouped"].len(), 1);
}

const INI: &str = "\
# an Ansible INI inventory
bastion ansible_host=192.0.2.1

[gpu]
node[1:3] ansible_user=root
node9 ansible_port=2200 ansible_ssh_private_key_file=\"/keys/my key\"  # comment

[gpu:vars]
python=/opt/torch/.venv/bin/python3

[rack:children]
gpu
";

#[test]
fn reads_ansible_ini() {
    let inventory = parse(INI, "hosts.ini").unwrap();
    let names: Vec<&str> = inventory.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["bastion", "node1", "node2", "node3", "node9"]);
    assert_eq!(inventory.hosts[0].address.as_deref(), Some("192.0.2.1"));
    assert_eq!(inventory.hosts[4].port, Some(2200));
    assert_eq!(
        inventory.hosts[4].identity.as_deref(),
        Some(Path::new("/keys/my key"))
    );
    assert_eq!(
        inventory.hosts[1].python.as_deref(),
        Some(Path::new("/opt/torch/.venv/bin/python3"))
    );
    assert_eq!(inventory.groups["rack"].len(), 4);
    assert_eq!(inventory.groups["ungrouped"].len(), 1);
}

#[test]
fn limit_patterns_select_as_ansible_does() {
    let inventory = parse(INI, "hosts.ini").unwrap();
    let names = |limit: &str| -> Vec<String> {
        select(&inventory, Some(limit))
            .unwrap()
            .iter()
            .map(|host| host.name.clone())
            .collect()
    };
    assert_eq!(names("gpu:!node2"), ["node1", "node3", "node9"]);
    assert_eq!(names("bastion,node1"), ["bastion", "node1"]);
    assert_eq!(names("node*:&rack:!node9"), ["node1", "node2", "node3"]);
    assert_eq!(names("~node[23]$"), ["node2", "node3"]);
    assert_eq!(names("all").len(), 5);
    let error = select(&inventory, Some("nodes")).unwrap_err().to_string();
    assert!(error.contains("matches no host"), "{error}");
}

#[test]
fn ranges_keep_widths_letters_and_steps() {
    assert_eq!(expand_range("n[08:10]").unwrap(), ["n08", "n09", "n10"]);
    assert_eq!(expand_range("r[a:c]x").unwrap(), ["rax", "rbx", "rcx"]);
    assert_eq!(expand_range("n[0:6:3]").unwrap(), ["n0", "n3", "n6"]);
    assert_eq!(
        expand_range("r[1:2]n[1:2]").unwrap(),
        ["r1n1", "r1n2", "r2n1", "r2n2"]
    );
    assert!(expand_range("n[3:1]").is_err());
    assert!(expand_range("n[0:99999999]").is_err(), "bounded");
    assert!(expand_range("n[0:2").is_err());
}

#[test]
fn values_that_could_add_ssh_directives_are_refused_with_their_line() {
    for (text, wanted) in [
        (
            "all:\n  hosts:\n    \"node0\\n  ProxyCommand sh\":\n",
            "is not a host name",
        ),
        (
            "all:\n  hosts:\n    node0:\n      ansible_host: \"-oProxyCommand=x\"\n",
            "address",
        ),
        (
            "all:\n  hosts:\n    node0:\n      ansible_user: \"root\\nProxyCommand x\"\n",
            "user",
        ),
        ("all:\n  hosts:\n    node0:\n      port: 99999\n", "port"),
        (
            "all:\n  hosts:\n    node0:\n      identity: \"/k\\\"ey\"\n",
            "identity",
        ),
        (
            "all:\n  hosts:\n    node0:\n      python: bin/python\n",
            "absolute",
        ),
        (
            "all:\n  children:\n    a:\n      children:\n        b:\n          children:\n            a:\n",
            "contains itself",
        ),
        ("all:\n  nodes:\n    x:\n", "`nodes`"),
        ("[gpu\nnode0\n", "header"),
        ("[gpu:bad]\n", "section"),
        ("node0 ansible_user\n", "key=value"),
    ] {
        let error = parse(text, "inv").unwrap_err().to_string();
        assert!(error.contains(wanted), "{text:?}: {error}");
        assert!(error.starts_with("inv:"), "{error}");
    }
}

#[test]
fn ssh_config_sets_inventory_values_first_and_includes_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base_config");
    std::fs::write(&base, "Host *\n    BatchMode yes\n").unwrap();
    let inventory = parse(YAML, "inv.yml").unwrap();
    let hosts: Vec<&InventoryHost> = inventory.hosts.iter().collect();
    let path = write_ssh_config(dir.path(), &hosts, Some(&base))
        .unwrap()
        .unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.contains("Host login1\n    HostName 10.0.0.2\n    User admin\n    Port 2222\n"),
        "{text}"
    );
    let include = text.find("Match all\nInclude").unwrap();
    assert!(
        include > text.find("Host special").unwrap(),
        "the user's configuration comes last: {text}"
    );
    let plain = parse("all:\n  hosts:\n    node0:\n", "inv").unwrap();
    let hosts: Vec<&InventoryHost> = plain.hosts.iter().collect();
    assert!(
        write_ssh_config(dir.path(), &hosts, Some(&base))
            .unwrap()
            .is_none()
    );
}
