// expected-error @+1 {{Operation this is not registered}}
this is not IR
